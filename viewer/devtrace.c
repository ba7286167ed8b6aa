/* The devtrace command: dispatches to one subcommand per file (run.c, ...),
 * and answers --help and --version, and `rules` (the diagnosis's rule registry, printed). Also what every
 * command shares: the --source-root option, and one line and exit status 2 when what it printed could not be
 * written (a full disk, a closed pipe's reader, /dev/full). */
#include "diag.h"
#include "vw.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* `devtrace rules [--json] [ID]`: the registry of the diagnosis's rules (viewer/rules/registry.c) in the order
 * they are tried, each with its summary, the kinds of fix it returns and (--json, or one ID) its documentation;
 * README's rule table and docs/rules.md are generated from --json (scripts/gen_rules_doc.py). */
static int cmd_rules(int argc, char **argv) {
    /* the languages a rule explains programs of (its fixtures are in each) */
    static const char *const lang_names[] = {[VW_LANG_PYTHON] = "python", [VW_LANG_C] = "c", [VW_LANG_CXX] = "c++"};
    int json = 0;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: devtrace rules [--json] [ID]\n\nThe diagnosis's rules in the order they are tried; with ID, "
                   "that rule's documentation.\n");
            return VW_EXIT_OK;
        } else if (argv[i][0] != '-' && !only)
            only = argv[i];
        else {
            vw_error("rules: unknown argument '%s'; see 'devtrace rules --help'", argv[i]);
            return VW_EXIT_USAGE;
        }
    }
    if (only && !vw_rule_find(only)) {
        vw_error("rules: no rule '%s'; 'devtrace rules' lists them", only);
        return VW_EXIT_USAGE;
    }
    if (json) fputs("{\"rules\": [", stdout);
    for (int i = 0, n = 0; i < vw_nrules; i++) {
        const struct vw_rule *r = vw_rules[i];
        if (only && strcmp(only, r->id)) continue;
        if (json) {
            fputs(n++ ? ",\n  {\"id\": " : "\n  {\"id\": ", stdout);
            vw_put_json_string(stdout, r->id);
            printf(", \"priority\": %d, \"summary\": ", i + 1);
            vw_put_json_string(stdout, r->summary);
            fputs(", \"doc\": ", stdout);
            vw_put_json_string(stdout, r->doc);
            fputs(", \"example\": ", stdout);
            vw_put_json_string(stdout, r->example);
            fputs(", \"fixes\": [", stdout);
            for (int f = 0, nf = 0; f < VW_FIX_NKINDS; f++)
                if (r->fixes & (1u << f)) {
                    if (nf++) fputs(", ", stdout);
                    vw_put_json_string(stdout, vw_fix_kind_name((enum vw_fix_kind)f));
                }
            fputs("], \"languages\": [", stdout);
            for (int l = 0, nl = 0; l < (int)(sizeof lang_names / sizeof lang_names[0]); l++)
                if (lang_names[l] && (r->langs & VW_LANG_BIT(l))) {
                    if (nl++) fputs(", ", stdout);
                    vw_put_json_string(stdout, lang_names[l]);
                }
            fputs("]}", stdout);
            continue;
        }
        printf("%2d. %s\n    %s\n    fixes:", i + 1, r->id, r->summary);
        for (int f = 0; f < VW_FIX_NKINDS; f++)
            if (r->fixes & (1u << f)) printf(" %s", vw_fix_kind_name((enum vw_fix_kind)f));
        printf("\n    languages:");
        for (int l = 0; l < (int)(sizeof lang_names / sizeof lang_names[0]); l++)
            if (lang_names[l] && (r->langs & VW_LANG_BIT(l))) printf(" %s", lang_names[l]);
        printf("\n");
        if (only) printf("\n    %s\n\n    example: %s\n", r->doc, r->example);
    }
    if (json) {
        fputs("\n], \"fix_kinds\": [", stdout);
        for (int f = 0; f < VW_FIX_NKINDS; f++) {
            fputs(f ? ",\n  {\"name\": " : "\n  {\"name\": ", stdout);
            vw_put_json_string(stdout, vw_fix_kind_name((enum vw_fix_kind)f));
            fputs(", \"doc\": ", stdout);
            vw_put_json_string(stdout, vw_fix_kind_doc((enum vw_fix_kind)f));
            fputs("}", stdout);
        }
        fputs("\n]}\n", stdout);
    }
    return VW_EXIT_OK;
}

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
    {"rules", cmd_rules, "the diagnosis's rules in the order they are tried, with what each explains"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: devtrace COMMAND [ARGS...]\n\n"
               "devtrace finds out which tensor, created where, was left on the wrong device.\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
    fprintf(f, "\n'devtrace COMMAND --help' describes a command. Exit status: 0 success, 1 the trace\n"
               "holds a device mismatch (report), 2 bad usage or unreadable input, 125 devtrace\n"
               "could not start the program (run); run otherwise passes on the program's status.\n\n"
               "A trace is untrusted input (docs/security.md): it shows lines only of regular files under the\n"
               "source root, the current directory unless '--source-root DIR' (any reading command) or\n"
               "DEVTRACE_SOURCE_ROOT names another.\n");
}

/* --source-root DIR (or --source-root=DIR) anywhere before a "--", taken out of argv: every reading
 * command accepts it. 0, or -1 after saying why. */
static int take_source_root(int *argc, char **argv) {
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        if (!strcmp(argv[i], "--")) {
            while (i < *argc) argv[out++] = argv[i++];
            break;
        }
        const char *dir = NULL;
        if (!strcmp(argv[i], "--source-root")) {
            if (i + 1 == *argc) {
                vw_error("--source-root needs a directory");
                return -1;
            }
            dir = argv[++i];
        } else if (!strncmp(argv[i], "--source-root=", 14))
            dir = argv[i] + 14;
        if (!dir) {
            argv[out++] = argv[i];
            continue;
        }
        if (vw_source_root_set(dir) < 0) {
            vw_error("--source-root %s: not a directory", dir);
            return -1;
        }
    }
    argv[out] = NULL;
    *argc = out;
    return 0;
}

/* What a command printed reached stdout, or one line and VW_EXIT_USAGE. A command that saw the error
 * itself said so and returned VW_EXIT_USAGE already: no second line then. */
static int finish_stdout(int rc) {
    int bad = fflush(stdout) != 0 || ferror(stdout);
    int err = errno;
    if (!bad) return rc;
    if (rc != VW_EXIT_USAGE) vw_error("cannot write to standard output: %s", strerror(err ? err : EIO));
    return VW_EXIT_USAGE;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return VW_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return finish_stdout(VW_EXIT_OK);
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("devtrace %s\n", VW_VERSION);
        return finish_stdout(VW_EXIT_OK);
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(argv[1], cmds[i].name) == 0) {
            int sub_argc = argc - 1;
            /* run passes its arguments to the program: none of them is ours */
            if (cmds[i].fn != vw_cmd_run && take_source_root(&sub_argc, argv + 1) < 0) return VW_EXIT_USAGE;
            return finish_stdout(cmds[i].fn(sub_argc, argv + 1));
        }
    vw_error("'%s' is not a devtrace command; see 'devtrace --help'", argv[1]);
    return VW_EXIT_USAGE;
}
