/*
 * The libcurl floors: how many HTTP/2 POSTs per second libcurl itself sustains on this machine,
 * with nothing of Pushgate around it, in two event-loop styles:
 *
 *   poll    curl_multi_perform + curl_multi_poll, a header list and a POST body set per request
 *           (the simpler loop, for comparison);
 *   socket  curl_multi_socket_action driven by epoll (curl's socket and timer callbacks), one
 *           header list shared by every request and the options set once per easy handle: each
 *           request only re-adds its handle (the pattern PushgateCurl's loop follows).
 *   socket-h1  the socket loop over HTTP/1.1 (as WNS speaks it): STREAMS keep-alive connections,
 *           one request on each at a time.
 *
 * Used by scripts/bench-dispatch.sh to tell the engine's own overhead apart from libcurl's.
 *
 *   cc -O2 -o curl_floor curl_floor.c -lcurl -lpthread
 *   ./curl_floor poll|socket|socket-h1 https://127.0.0.1:PORT/3/device/TOKEN CA.pem COUNT STREAMS [THREADS]
 *
 * THREADS loops run in one process, each with its own multi handle and connection (as
 * Pushgate's pools do), each sending COUNT / THREADS requests. The last line also gives the
 * process's CPU time per request (user + system, warm-up included).
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static size_t discard(char *data, size_t size, size_t count, void *context) {
    (void)data; (void)context;
    return size * count;
}

static double seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec + now.tv_nsec / 1e9;
}

/* A multi handle multiplexing up to `streams` streams on one connection. */
static int http1 = 0; /* socket-h1: `streams` HTTP/1.1 connections instead */

static CURLM *new_multi(long streams) {
    CURLM *multi = curl_multi_init();
    if (http1) {
        curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_NOTHING);
        curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, streams);
        return multi;
    }
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, 1L);
    curl_multi_setopt(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, streams);
    return multi;
}

/* An easy handle with the options every request shares. */
static CURL *new_easy(const char *ca) {
    CURL *easy = curl_easy_init();
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_PIPEWAIT, http1 ? 0L : 1L);
    curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, http1 ? CURL_HTTP_VERSION_1_1 : CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(easy, CURLOPT_CAINFO, ca);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 30000L);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, discard);
    return easy;
}

/* The next finished transfer, removed from `multi` (failures counted), or NULL. */
static CURL *take_done(CURLM *multi, long *failed) {
    int remaining = 0;
    CURLMsg *message;
    while ((message = curl_multi_info_read(multi, &remaining))) {
        if (message->msg != CURLMSG_DONE) continue;
        CURL *easy = message->easy_handle;
        long status = 0;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        if (message->data.result != CURLE_OK || status != 200) (*failed)++;
        curl_multi_remove_handle(multi, easy);
        return easy;
    }
    return NULL;
}

struct loop {
    int socket_mode;
    const char *url, *ca;
    long count, streams, failed;
    double begin, end;
};

static void *run_poll(void *context) {
    struct loop *loop = context;
    const char *url = loop->url, *ca = loop->ca;
    long count = loop->count, streams = loop->streams;
    static const char body[] = "{\"aps\":{\"alert\":\"From bench: throughput\"}}";
    CURLM *multi = new_multi(streams);

    CURL **pool = calloc(streams, sizeof(CURL *));
    long pooled = 0, started = 0, done = 0, failed = 0;
    for (long i = 0; i < streams; i++) pool[pooled++] = new_easy(ca);
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
        CURL *easy;
        while ((easy = take_done(multi, &failed))) {
            struct curl_slist *headers = NULL;
            curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&headers);
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

/* socket mode: curl tells which sockets to watch (socket callback) and when to call it back
   (timer callback); epoll waits for both. */
struct socket_loop {
    int epoll;
    long timeout_ms; /* -1: none */
};

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *context, void *socket_context) {
    (void)easy; (void)socket_context;
    struct socket_loop *loop = context;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(loop->epoll, EPOLL_CTL_DEL, fd, NULL);
        return 0;
    }
    struct epoll_event event = {0};
    event.data.fd = fd;
    if (what & CURL_POLL_IN) event.events |= EPOLLIN;
    if (what & CURL_POLL_OUT) event.events |= EPOLLOUT;
    if (epoll_ctl(loop->epoll, EPOLL_CTL_MOD, fd, &event) != 0) epoll_ctl(loop->epoll, EPOLL_CTL_ADD, fd, &event);
    return 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *context) {
    (void)multi;
    ((struct socket_loop *)context)->timeout_ms = timeout_ms;
    return 0;
}

static void *run_socket(void *context) {
    struct loop *loop = context;
    long count = loop->count, streams = loop->streams;
    static const char body[] = "{\"aps\":{\"alert\":\"From bench: throughput\"}}";
    struct socket_loop events = {epoll_create1(0), -1};
    CURLM *multi = new_multi(streams);
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, &events);
    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(multi, CURLMOPT_TIMERDATA, &events);

    struct curl_slist *headers = NULL;
    headers = curl_slist_append(headers, "apns-push-type: alert");
    headers = curl_slist_append(headers, "apns-priority: 10");
    headers = curl_slist_append(headers, "apns-topic: com.example.bench");
    headers = curl_slist_append(headers, "content-type: application/json");
    headers = curl_slist_append(headers, "Expect:");
    CURL **pool = calloc(streams, sizeof(CURL *));
    long pooled = 0, started = 0, done = 0, failed = 0;
    for (long i = 0; i < streams; i++) {
        CURL *easy = new_easy(loop->ca);
        curl_easy_setopt(easy, CURLOPT_URL, loop->url);
        curl_easy_setopt(easy, CURLOPT_POST, 1L);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
        pool[pooled++] = easy;
    }
    double begin = 0;
    long warmup = 2000;
    int running = 0;
    struct epoll_event ready[64];
    while (done < count + warmup) {
        while (pooled > 0 && started < count + warmup) {
            curl_multi_add_handle(multi, pool[--pooled]);
            started++;
        }
        int n = epoll_wait(events.epoll, ready, 64, events.timeout_ms < 0 ? 1000 : (int)events.timeout_ms);
        if (n == 0) {
            events.timeout_ms = -1;
            curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        for (int i = 0; i < n; i++) {
            int mask = 0;
            if (ready[i].events & EPOLLIN) mask |= CURL_CSELECT_IN;
            if (ready[i].events & EPOLLOUT) mask |= CURL_CSELECT_OUT;
            if (ready[i].events & (EPOLLERR | EPOLLHUP)) mask |= CURL_CSELECT_ERR;
            curl_multi_socket_action(multi, ready[i].data.fd, mask, &running);
        }
        if (events.timeout_ms == 0) {
            events.timeout_ms = -1;
            curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        CURL *easy;
        while ((easy = take_done(multi, &failed))) {
            pool[pooled++] = easy;
            if (++done == warmup) begin = seconds();
        }
    }
    loop->begin = begin;
    loop->end = seconds();
    loop->failed = failed;
    curl_multi_cleanup(multi);
    curl_slist_free_all(headers);
    close(events.epoll);
    return NULL;
}

static void *run(void *context) {
    return ((struct loop *)context)->socket_mode ? run_socket(context) : run_poll(context);
}

int main(int argc, char **argv) {
    if (argc < 6 || (strcmp(argv[1], "poll") != 0 && strcmp(argv[1], "socket") != 0 && strcmp(argv[1], "socket-h1") != 0)) {
        fprintf(stderr, "usage: %s poll|socket|socket-h1 URL CA_FILE COUNT STREAMS [THREADS]\n", argv[0]);
        return 2;
    }
    http1 = strcmp(argv[1], "socket-h1") == 0;
    int socket_mode = strcmp(argv[1], "poll") != 0;
    long count = atol(argv[4]), threads = argc > 6 ? atol(argv[6]) : 1;
    curl_global_init(CURL_GLOBAL_ALL);
    struct loop loops[16];
    pthread_t ids[16];
    if (threads < 1 || threads > 16) threads = 1;
    for (long i = 0; i < threads; i++) {
        loops[i] = (struct loop){socket_mode, argv[2], argv[3], count / threads, atol(argv[5]), 0, 0, 0};
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
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double cpu = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
    printf("libcurl alone (%s): %ld requests in %.2f s = %.0f requests/s over %ld thread(s) (%ld failed), CPU %.1f us per request\n",
           argv[1], count, elapsed, count / elapsed, threads, failed, cpu * 1e6 / count);
    return failed == 0 ? 0 : 1;
}
