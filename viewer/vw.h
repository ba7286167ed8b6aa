/* Shared declarations of the devtrace command: one function per subcommand
 * (one file each), and the helpers they share. */
#ifndef DEVTRACE_VW_H
#define DEVTRACE_VW_H

#include <stdio.h>

#define VW_VERSION "0.1.0"

/* Exit statuses of the devtrace command itself. */
enum {
    VW_EXIT_OK = 0,       /* read fine (report: no device mismatch) */
    VW_EXIT_FOUND = 1,    /* report: the trace holds a device mismatch */
    VW_EXIT_USAGE = 2,    /* bad usage or unreadable input */
    VW_EXIT_LAUNCH = 125, /* run: devtrace itself could not start the program */
};

int vw_cmd_run(int argc, char **argv);

/* "devtrace: <message>" on stderr. */
void vw_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
