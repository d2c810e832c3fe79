/*
 * A fixed-rate (open-loop) HTTP load generator: sends one request every 1/RATE seconds whatever
 * the answers do, for SECONDS, and prints the latency distribution. Unlike a closed loop (wrk),
 * a slow answer does not slow the sending down, so queueing in the server shows in the tail.
 *
 *   cc -O2 -o fixed_rate fixed_rate.c -lcurl -lm
 *   ./fixed_rate URL RATE SECONDS [AUTHORIZATION] [BODY]
 *
 * POSTs BODY (JSON) when given, else GETs. HTTP/1.1 keep-alive connections, as many as the
 * requests in flight need (at most 256). Sending times come from a timerfd and answers from
 * curl_multi_socket_action on epoll, so both are seen within microseconds, not a poll tick.
 * Latency is counted from each request's scheduled time (a request that had to wait for a free
 * connection counts its wait): coordinated omission is not hidden.
 * Output: one line `requests=N errors=E p50_ms=… p99_ms=… p999_ms=… max_ms=… late_starts=L`.
 */
#include <curl/curl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static size_t discard(char *data, size_t size, size_t count, void *context) {
    (void)data; (void)context;
    return size * count;
}

struct events { int epoll; int64_t curl_deadline; };

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *context, void *socket_context) {
    (void)easy; (void)socket_context;
    struct events *events = context;
    if (what == CURL_POLL_REMOVE) { epoll_ctl(events->epoll, EPOLL_CTL_DEL, fd, NULL); return 0; }
    struct epoll_event event = {0};
    event.data.fd = fd;
    if (what & CURL_POLL_IN) event.events |= EPOLLIN;
    if (what & CURL_POLL_OUT) event.events |= EPOLLOUT;
    if (epoll_ctl(events->epoll, EPOLL_CTL_MOD, fd, &event) != 0) epoll_ctl(events->epoll, EPOLL_CTL_ADD, fd, &event);
    return 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *context) {
    (void)multi;
    ((struct events *)context)->curl_deadline = timeout_ms < 0 ? -1 : now_ns() + (int64_t)timeout_ms * 1000000;
    return 0;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { MAX_HANDLES = 256 };

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s URL RATE SECONDS [AUTHORIZATION] [BODY]\n", argv[0]);
        return 2;
    }
    const char *url = argv[1];
    double rate = atof(argv[2]);
    long total = (long)(rate * atof(argv[3]));
    const char *authorization = argc > 4 && argv[4][0] ? argv[4] : NULL;
    const char *body = argc > 5 ? argv[5] : NULL;
    curl_global_init(CURL_GLOBAL_ALL);

    struct events events = {epoll_create1(0), -1};
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, &events);
    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(multi, CURLMOPT_TIMERDATA, &events);
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, (long)MAX_HANDLES);

    struct curl_slist *headers = NULL;
    char line[4096];
    if (authorization) {
        snprintf(line, sizeof line, "Authorization: %s", authorization);
        headers = curl_slist_append(headers, line);
    }
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Expect:");
    CURL *pool[MAX_HANDLES];
    int pooled = 0;
    for (int i = 0; i < MAX_HANDLES; i++) {
        CURL *easy = curl_easy_init();
        curl_easy_setopt(easy, CURLOPT_URL, url);
        curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
        curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 30000L);
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
        if (body) {
            curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body);
            curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
        }
        pool[pooled++] = easy;
    }

    int timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    struct epoll_event timer_event = {.events = EPOLLIN, .data.fd = timer};
    epoll_ctl(events.epoll, EPOLL_CTL_ADD, timer, &timer_event);

    double *latencies = calloc((size_t)total, sizeof(double));
    int64_t *scheduled_at = calloc((size_t)total, sizeof(int64_t));
    long next = 0, done = 0, errors = 0, late = 0;
    int64_t interval = (int64_t)(1e9 / rate), start = now_ns() + 10000000;
    int running = 0;
    struct epoll_event ready[64];
    while (done < total) {
        int64_t now = now_ns();
        // Start every request that is due, each from a free handle (a busy server makes later
        // ones wait for a handle: their wait counts, from their scheduled time).
        while (next < total && start + next * interval <= now && pooled > 0) {
            CURL *easy = pool[--pooled];
            scheduled_at[next] = start + next * interval;
            if (now - scheduled_at[next] > 1000000) late++;
            curl_easy_setopt(easy, CURLOPT_PRIVATE, (void *)(intptr_t)next);
            curl_multi_add_handle(multi, easy);
            next++;
        }
        // Wake at the next request's time (timerfd, nanoseconds) or at curl's deadline.
        if (next < total && pooled > 0) {
            int64_t due = start + next * interval;
            struct itimerspec spec = {0};
            spec.it_value.tv_sec = due / 1000000000;
            spec.it_value.tv_nsec = due % 1000000000;
            timerfd_settime(timer, TFD_TIMER_ABSTIME, &spec, NULL);
        }
        int timeout = 1000;
        if (events.curl_deadline >= 0) {
            int64_t left = (events.curl_deadline - now_ns()) / 1000000;
            timeout = left < 0 ? 0 : (left > 1000 ? 1000 : (int)left);
        }
        int count = epoll_wait(events.epoll, ready, 64, timeout);
        for (int i = 0; i < count; i++) {
            if (ready[i].data.fd == timer) {
                uint64_t expirations;
                ssize_t got = read(timer, &expirations, sizeof expirations);
                (void)got;
                continue;
            }
            int mask = 0;
            if (ready[i].events & EPOLLIN) mask |= CURL_CSELECT_IN;
            if (ready[i].events & EPOLLOUT) mask |= CURL_CSELECT_OUT;
            if (ready[i].events & (EPOLLERR | EPOLLHUP)) mask |= CURL_CSELECT_ERR;
            curl_multi_socket_action(multi, ready[i].data.fd, mask, &running);
        }
        if (events.curl_deadline >= 0 && now_ns() >= events.curl_deadline) {
            events.curl_deadline = -1;
            curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        CURLMsg *message;
        int remaining;
        while ((message = curl_multi_info_read(multi, &remaining))) {
            if (message->msg != CURLMSG_DONE) continue;
            CURL *easy = message->easy_handle;
            intptr_t index = 0;
            long status = 0;
            curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&index);
            curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
            if (message->data.result != CURLE_OK || status < 200 || status > 299) errors++;
            latencies[done++] = (now_ns() - scheduled_at[index]) / 1e6;
            curl_multi_remove_handle(multi, easy);
            pool[pooled++] = easy;
        }
    }
    qsort(latencies, (size_t)total, sizeof(double), compare);
#define AT(q) latencies[(long)fmin((double)total - 1, floor((q) * (double)total))]
    printf("requests=%ld errors=%ld p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f late_starts=%ld\n", total, errors, AT(0.50),
           AT(0.99), AT(0.999), latencies[total - 1], late);
    return errors == 0 ? 0 : 1;
}
