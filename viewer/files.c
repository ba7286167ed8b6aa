/* Opening a file a trace names, bounded: read-only, without blocking, and only when it is a regular file of at
 * most a given size (a FIFO, a device or /dev/zero never hold the viewer). What may be opened (the source root)
 * is source.c's; this file only opens. */
#include "vw.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int vw_open_regular(const char *path, int64_t cap) {
    /* O_NONBLOCK: opening a FIFO with no writer returns at once (then refused as not regular) */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return -1;
    struct stat st;
    int e = fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : st.st_size > cap ? EFBIG : 0;
    if (e) {
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

FILE *vw_fopen_regular(const char *path, int64_t cap) {
    int fd = vw_open_regular(path, cap);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f && fd >= 0) close(fd);
    return f;
}

