/* The devtrace command: dispatches to one subcommand per file (run.c, ...),
 * and answers --help and --version. */
#include "vw.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} cmds[] = {
    {"run", vw_cmd_run, "run a program with the tracer loaded and record its trace"},
    {"report", vw_cmd_report, "explain each device mismatch in a trace: the chain, and where the move belongs"},
    {"show", vw_cmd_show, "one tensor's whole life: creation, names, views, transfers, ops, free"},
    {"tensors", vw_cmd_tensors, "a table of the tensors (--device D, --alive-at-error)"},
    {"transfers", vw_cmd_transfers, "transfers grouped by call site, with per-step copies flagged"},
    {"fix", vw_cmd_fix, "the suggested change as a patch; --verify applies it to a copy and runs the program again"},
    {"export", vw_cmd_export, "a Chrome/Perfetto timeline (--format chrome) or a single-file HTML report"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: devtrace COMMAND [ARGS...]\n\n"
               "devtrace finds out which tensor, created where, was left on the wrong device.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
    fprintf(f, "\n'devtrace COMMAND --help' describes a command. Exit status: 0 success, 1 the trace\n"
               "holds a device mismatch (report), 2 bad usage or unreadable input, 125 devtrace\n"
               "could not start the program (run); run otherwise passes on the program's status.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return VW_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return VW_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("devtrace %s\n", VW_VERSION);
        return VW_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(argv[1], cmds[i].name) == 0) return cmds[i].fn(argc - 1, argv + 1);
    vw_error("'%s' is not a devtrace command; see 'devtrace --help'", argv[1]);
    return VW_EXIT_USAGE;
}
