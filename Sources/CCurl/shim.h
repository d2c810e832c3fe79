#ifndef PUSHGATE_CCURL_SHIM_H
#define PUSHGATE_CCURL_SHIM_H

#include <curl/curl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

// curl_easy_setopt / curl_easy_getinfo / curl_multi_setopt are variadic, which Swift cannot call.
// These typed wrappers are the only way Swift code reaches them.

static inline CURLcode pushgate_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode pushgate_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode pushgate_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode pushgate_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode pushgate_easy_setopt_write_function(
    CURL *handle, size_t (*function)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, function);
}

static inline CURLcode pushgate_easy_setopt_header_function(
    CURL *handle, size_t (*function)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, function);
}

static inline CURLcode pushgate_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode pushgate_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLMcode pushgate_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

// CURLVERSION_NOW is a macro alias Swift does not import.
static inline curl_version_info_data *pushgate_curl_version_info(void) {
    return curl_version_info(CURLVERSION_NOW);
}

// curl_multi_socket_action's callbacks (CURLMOPT_SOCKETFUNCTION, CURLMOPT_TIMERFUNCTION) and
// their context pointers.
typedef int (*pushgate_socket_callback)(CURL *easy, curl_socket_t socket, int what, void *context, void *socket_context);
typedef int (*pushgate_timer_callback)(CURLM *multi, long timeout_ms, void *context);

static inline CURLMcode pushgate_multi_setopt_socket_function(CURLM *multi, pushgate_socket_callback function) {
    return curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, function);
}

static inline CURLMcode pushgate_multi_setopt_timer_function(CURLM *multi, pushgate_timer_callback function) {
    return curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, function);
}

static inline CURLMcode pushgate_multi_setopt_pointer(CURLM *multi, CURLMoption option, void *value) {
    return curl_multi_setopt(multi, option, value);
}

// CURL_SOCKET_TIMEOUT is a macro of a macro, which Swift does not import.
static inline CURLMcode pushgate_multi_socket_timeout(CURLM *multi, int *running) {
    return curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, running);
}

// epoll for the curl loop. `struct epoll_event` is packed on x86-64, so Swift sees only these.

/// Watches `fd` for what curl's socket callback asked (CURL_POLL_IN/OUT/INOUT), or stops
/// watching it (CURL_POLL_REMOVE).
static inline int pushgate_epoll_watch(int epoll, int fd, int what) {
    if (what == CURL_POLL_REMOVE) return epoll_ctl(epoll, EPOLL_CTL_DEL, fd, NULL);
    struct epoll_event event = {0};
    event.data.fd = fd;
    if (what & CURL_POLL_IN) event.events |= EPOLLIN;
    if (what & CURL_POLL_OUT) event.events |= EPOLLOUT;
    if (epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event) == 0) return 0;
    return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
}

/// Waits up to `timeout_ms` and writes each ready descriptor with its CURL_CSELECT_* mask;
/// returns how many (at most 64), or -1 with errno.
static inline int pushgate_epoll_wait(int epoll, int *fds, int *masks, int capacity, int timeout_ms) {
    struct epoll_event events[64];
    if (capacity > 64) capacity = 64;
    int count = epoll_wait(epoll, events, capacity, timeout_ms);
    for (int i = 0; i < count; i++) {
        int mask = 0;
        if (events[i].events & EPOLLIN) mask |= CURL_CSELECT_IN;
        if (events[i].events & EPOLLOUT) mask |= CURL_CSELECT_OUT;
        if (events[i].events & (EPOLLERR | EPOLLHUP)) mask |= CURL_CSELECT_ERR;
        fds[i] = events[i].data.fd;
        masks[i] = mask;
    }
    return count;
}

static inline int pushgate_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

/// An eventfd that wakes the loop's epoll_wait from other threads.
static inline int pushgate_wakeup_create(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

static inline void pushgate_wakeup_signal(int fd) {
    uint64_t one = 1;
    ssize_t written = write(fd, &one, sizeof one);
    (void)written;  // EAGAIN: the counter is already non-zero, the loop wakes anyway
}

static inline void pushgate_wakeup_drain(int fd) {
    uint64_t count;
    ssize_t got = read(fd, &count, sizeof count);
    (void)got;
}

/// Monotonic milliseconds, for curl's timer.
static inline int64_t pushgate_monotonic_milliseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

#endif
