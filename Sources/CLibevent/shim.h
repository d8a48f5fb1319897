// C shim for token-sidecar's EventLoop module.
//
// Swift cannot see function-like macros, and a few libevent entry points are macros.
// Each wrapper here exists only because the thing it wraps is a macro (or needs a constant
// that Swift imports with an awkward type). Nothing else belongs in this file.
#ifndef TOKEN_SIDECAR_CLIBEVENT_SHIM_H
#define TOKEN_SIDECAR_CLIBEVENT_SHIM_H

// System headers first: libevent's event-config.h defines _GNU_SOURCE, and if <sys/select.h> is
// first seen after that, this module's fd_set differs from the one Glibc/Dispatch modules see and
// Swift refuses to import both ("fds_bits ... not present in definition of fd_set").
#include <sys/types.h>
#include <sys/time.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include <event2/event.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>
#include <event2/dns.h>
#include <event2/thread.h>
#include <event2/util.h>
// OpenSSL has its own module (COpenSSL): bufferevent_ssl.h only names `struct ssl_st`.

/// `errno` is a macro expanding to a thread-local lvalue; Swift's Glibc overlay has it, but keeping
/// the read here makes the libevent error path independent of the overlay.
static inline int shim_errno(void) { return errno; }

/// `malloc_trim` (gives free heap pages back to the system): declared in <malloc.h>, which the
/// Glibc module does not import.
int malloc_trim(size_t pad);
static inline int shim_malloc_trim(void) { return malloc_trim(0); }

/// `mallinfo2` (glibc 2.33+, also from <malloc.h>): only `fordblks` is read, the bytes in free
/// chunks that the heap keeps.
struct mallinfo2 {
    size_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
};
struct mallinfo2 mallinfo2(void);
static inline size_t shim_heap_free_bytes(void) { return mallinfo2().fordblks; }

/// `malloc_usable_size` (how many bytes a block from malloc can hold; tells the chunk cache a
/// chunk's size): also from <malloc.h>.
size_t malloc_usable_size(void *pointer);
static inline size_t shim_malloc_usable_size(void *pointer) { return malloc_usable_size(pointer); }

/// Gives back the blocks of a byte range of a file, keeping its size (`fallocate` with
/// FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE). glibc declares `fallocate` only under
/// _GNU_SOURCE, which Swift's Glibc module is built without, so it is declared here.
extern int fallocate(int fd, int mode, off_t offset, off_t len);
static inline int shim_punch_hole(int fd, off_t offset, off_t length) {
    return fallocate(fd, 0x02 /* FALLOC_FL_PUNCH_HOLE */ | 0x01 /* FALLOC_FL_KEEP_SIZE */, offset, length);
}

/// Sets TCP_NODELAY: proxied requests are small and latency-bound; Nagle would add delays.
static inline int shim_set_nodelay(int fd) {
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/// Sets TCP_NOTSENT_LOWAT: the kernel keeps at most `bytes` of not-yet-sent data queued on the
/// socket. Without it, the send buffer of a client that reads slowly autotunes to 4 MiB.
static inline int shim_set_notsent_lowat(int fd, int bytes) {
    return setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &bytes, sizeof(bytes));
}

/// Sets TCP_MAXSEG before a connect: the SYN then offers the peer segments of at most `bytes`.
static inline int shim_set_max_segment(int fd, int bytes) {
    return setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &bytes, sizeof(bytes));
}

/// Sets SO_RCVBUF (the kernel doubles it for its bookkeeping and caps it at net.core.rmem_max;
/// the receive buffer is no longer autotuned afterwards).
static inline int shim_set_receive_buffer(int fd, int bytes) {
    return setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

/// Sizes a connected TCP socket's receive window: its buffer (SO_RCVBUF, which the kernel
/// doubles) and the window clamp to match (TCP_WINDOW_CLAMP). A larger SO_RCVBUF alone does not
/// widen the window of an established connection: the clamp and the growth threshold stay
/// where the smallest buffer put them (measured: a 29 KB window under a 1 MiB buffer).
static inline int shim_set_receive_window(int fd, int bytes) {
    int result = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
    int clamp = 2 * bytes;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_WINDOW_CLAMP, &clamp, sizeof(clamp));
    return result;
}

/// Hands a socket's buffer sizes back to the kernel's autotuning (clears the locks SO_RCVBUF and
/// SO_SNDBUF set: SO_BUF_LOCK, Linux 5.14+; an older kernel answers ENOPROTOOPT and the sizes
/// stay as set).
#ifndef SO_BUF_LOCK
#define SO_BUF_LOCK 72
#endif
static inline int shim_autotune_buffers(int fd) {
    int locks = 0;
    int result = setsockopt(fd, SOL_SOCKET, SO_BUF_LOCK, &locks, sizeof(locks));
    // A small SO_RCVBUF also clamped the window (TCP_WINDOW_CLAMP) and its growth threshold;
    // autotuning raises neither again on its own (the advertised window stayed at 29 KB, one
    // ACK round trip per 20 segments): lift the clamp to what autotuning may reach.
    int clamp = 32 << 20;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_WINDOW_CLAMP, &clamp, sizeof(clamp));
    return result;
}

/// Sets SO_REUSEPORT so each worker loop can own a listener on the same port.
static inline int shim_set_reuseport(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
}

#endif
