/*
 * The libcurl floor: how many HTTP/2 POSTs per second libcurl itself sustains on this machine,
 * with nothing of Pushgate around it. Same pattern as PushgateCurl's loop (curl multi, pooled
 * easy handles, curl_multi_poll, N streams in flight on one connection, a header list and a
 * POST body per request), in plain C. Used by scripts/bench-dispatch.sh to tell the engine's
 * own overhead apart from libcurl's.
 *
 *   cc -O2 -o curl_floor curl_floor.c -lcurl -lpthread
 *   ./curl_floor https://127.0.0.1:PORT/3/device/TOKEN CA.pem COUNT STREAMS [THREADS]
 *
 * THREADS loops run in one process, each with its own multi handle and connection (as
 * Pushgate's pools do), each sending COUNT / THREADS requests.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static size_t discard(char *data, size_t size, size_t count, void *context) {
    (void)data; (void)context;
    return size * count;
}

static double seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec + now.tv_nsec / 1e9;
}

struct loop {
    const char *url, *ca;
    long count, streams, failed;
    double begin, end;
};

static void *run(void *context) {
    struct loop *loop = context;
    const char *url = loop->url, *ca = loop->ca;
    long count = loop->count, streams = loop->streams;
    static const char body[] = "{\"aps\":{\"alert\":\"From bench: throughput\"}}";
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, 1L);
    curl_multi_setopt(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, streams);

    CURL **pool = calloc(streams, sizeof(CURL *));
    long pooled = 0, started = 0, done = 0, failed = 0;
    for (long i = 0; i < streams; i++) {
        CURL *easy = curl_easy_init();
        curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
        curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
        curl_easy_setopt(easy, CURLOPT_CAINFO, ca);
        curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 30000L);
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, discard);
        pool[pooled++] = easy;
    }
    double begin = 0;
    long warmup = 2000;
    while (done < count + warmup) {
        while (pooled > 0 && started < count + warmup) {
            CURL *easy = pool[--pooled];
            struct curl_slist *headers = NULL;
            headers = curl_slist_append(headers, "apns-push-type: alert");
            headers = curl_slist_append(headers, "apns-priority: 10");
            headers = curl_slist_append(headers, "apns-topic: com.example.bench");
            headers = curl_slist_append(headers, "content-type: application/json");
            headers = curl_slist_append(headers, "Expect:");
            curl_easy_setopt(easy, CURLOPT_URL, url);
            curl_easy_setopt(easy, CURLOPT_POST, 1L);
            curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
            curl_easy_setopt(easy, CURLOPT_COPYPOSTFIELDS, body);
            curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
            curl_easy_setopt(easy, CURLOPT_PRIVATE, headers);
            curl_multi_add_handle(multi, easy);
            started++;
        }
        int running = 0;
        curl_multi_perform(multi, &running);
        int remaining = 0;
        CURLMsg *message;
        while ((message = curl_multi_info_read(multi, &remaining))) {
            if (message->msg != CURLMSG_DONE) continue;
            CURL *easy = message->easy_handle;
            long status = 0;
            curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
            if (message->data.result != CURLE_OK || status != 200) failed++;
            struct curl_slist *headers = NULL;
            curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&headers);
            curl_multi_remove_handle(multi, easy);
            curl_slist_free_all(headers);
            pool[pooled++] = easy;
            if (++done == warmup) begin = seconds();
        }
        int ready = 0;
        curl_multi_poll(multi, NULL, 0, (pooled > 0 && started < count + warmup) ? 0 : 1000, &ready);
    }
    loop->begin = begin;
    loop->end = seconds();
    loop->failed = failed;
    curl_multi_cleanup(multi);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s URL CA_FILE COUNT STREAMS [THREADS]\n", argv[0]);
        return 2;
    }
    long count = atol(argv[3]), threads = argc > 5 ? atol(argv[5]) : 1;
    curl_global_init(CURL_GLOBAL_ALL);
    struct loop loops[16];
    pthread_t ids[16];
    if (threads < 1 || threads > 16) threads = 1;
    for (long i = 0; i < threads; i++) {
        loops[i] = (struct loop){argv[1], argv[2], count / threads, atol(argv[4]), 0, 0, 0};
        pthread_create(&ids[i], NULL, run, &loops[i]);
    }
    double begin = 0, end = 0;
    long failed = 0;
    for (long i = 0; i < threads; i++) {
        pthread_join(ids[i], NULL);
        if (i == 0 || loops[i].begin < begin) begin = loops[i].begin;
        if (loops[i].end > end) end = loops[i].end;
        failed += loops[i].failed;
    }
    double elapsed = end - begin;
    printf("libcurl alone: %ld requests in %.2f s = %.0f requests/s over %ld thread(s) (%ld failed)\n", count, elapsed,
           count / elapsed, threads, failed);
    return failed == 0 ? 0 : 1;
}
