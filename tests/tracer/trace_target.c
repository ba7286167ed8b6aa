/* A program for the tracer's tests: each mode exercises one situation
 * (plain ops and a mismatch, threads, fork, crashes, SIGKILL, dlopen, a full
 * disk, ring overflow) so check_tracer.c can run it traced and untraced and
 * read what the trace holds. Prints only deterministic lines. */
#include <devtrace/dt.h>
#include <devtrace/dt_nn.h>
#include <devtrace/probe.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEV dt_cuda_device(0)

/* The tensor whose creation stack the tests check: made in create_marked(),
 * which prints the address its caller resumes at; that exact address must
 * be a frame of the tensor's creation stack. */
__attribute__((noinline)) static dt_tensor *create_marked(void) {
    dt_tensor *t = dt_ones(DT_SHAPE(3), DT_F32, dt_cpu_device());
    printf("marker %p\n", __builtin_return_address(0));
    return t;
}

__attribute__((noinline)) static dt_tensor *make_marked_tensor(void) {
    dt_tensor *t = create_marked();
    dt_set_name(t, "marked");
    return t;
}

static void basic(void) {
    dt_set_error_handler(dt_error_handler_return, NULL, NULL);
    dt_tensor *m = make_marked_tensor();
    dt_tensor *x = dt_randn(DT_SHAPE(4, 3), dt_cpu_device());
    dt_set_name(x, "inputs");
    dt_tensor *g = dt_to(x, DEV);
    dt_tensor *w = dt_ones(DT_SHAPE(2, 3), DT_F32, DEV);
    dt_tensor *y = dt_linear(g, w, NULL);
    dt_tensor *bad = dt_matmul(y, m); /* cuda:0 vs cpu: a recorded mismatch */
    dt_tensor *v = dt_transpose(y, 0, 1);
    dt_tensor *c = dt_gt_scalar(y, 0), *o = dt_zeros(DT_SHAPE(4, 2), DT_F32, DEV);
    dt_tensor *sel = dt_where(c, y, o); /* 3 arguments */
    dt_add_(sel, y);                    /* its output: its input */
    float host[8];
    dt_to_host(y, host, sizeof host);
    dt_free(bad);
    dt_free(sel);
    dt_free(o);
    dt_free(c);
    dt_free(v);
    dt_free(y);
    dt_free(w);
    dt_free(g);
    dt_free(x);
    dt_free(m);
    printf("basic done\n");
}

/* The Cpus_allowed_list line of thread tid's status, or "". */
static void cpus_of(const char *tid, char *out, size_t size) {
    char path[300], line[512];
    snprintf(path, sizeof path, "/proc/self/task/%s/status", tid);
    out[0] = 0;
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "Cpus_allowed_list:", 18) == 0) snprintf(out, size, "%s", line);
    if (f) fclose(f);
}

/* Prints the CPUs the devtrace writer thread may run on, against the main
 * thread's: "writer cpus: same", "differ", or "none" without a writer. */
static void writer_cpus(void) {
    dt_tensor *t = dt_zeros(DT_SHAPE(2), DT_F32, dt_cpu_device()); /* the tracer is up */
    char me[32], mine[512], its[512] = "", path[300], comm[64];
    snprintf(me, sizeof me, "%d", (int)getpid());
    cpus_of(me, mine, sizeof mine);
    /* once its schema is made (100 ms on a quiet machine; up to 5 s asked for on a loaded one, under ASan) */
    for (int tries = 0; tries < 50 && (!tries || (its[0] && strcmp(mine, its))); tries++) {
        usleep(100 * 1000);
        its[0] = 0;
        DIR *d = opendir("/proc/self/task");
        for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
            snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
            FILE *c = fopen(path, "r");
            if (c && fgets(comm, sizeof comm, c) && strcmp(comm, "devtrace-writer\n") == 0)
                cpus_of(e->d_name, its, sizeof its);
            if (c) fclose(c);
        }
        if (d) closedir(d);
    }
    printf("writer cpus: %s\n", !its[0] ? "none" : strcmp(mine, its) == 0 ? "same" : "differ");
    dt_free(t);
}

/* Two training steps of a linear model with Adam. */
static void train(void) {
    dt_module *lin = dt_nn_linear(3, 2, 1);
    dt_optimizer *o = dt_adam(lin, 0.01, 0.9, 0.999, 1e-8, 0);
    dt_tensor *x = dt_ones(DT_SHAPE(4, 3), DT_F32, dt_cpu_device());
    for (int i = 0; i < 2; i++) {
        dt_tensor *y = dt_module_forward(lin, x), *l = dt_sum(y);
        dt_backward(l);
        dt_optimizer_step(o);
        dt_optimizer_zero_grad(o);
        dt_free(l);
        dt_free(y);
    }
    dt_free(x);
    dt_optimizer_free(o);
    dt_module_free(lin);
    printf("train done\n");
}

static void *worker(void *arg) {
    int n = *(int *)arg;
    for (int i = 0; i < n; i++) {
        dt_tensor *a = dt_zeros(DT_SHAPE(4), DT_F32, dt_cpu_device());
        dt_tensor *b = dt_add_scalar(a, 1);
        dt_free(a);
        dt_free(b);
    }
    return NULL;
}

/* Each iteration: zeros (created), add (begin, created, end), 2 frees = 6 events. */
static void threads(int nthreads, int n) {
    pthread_t th[64];
    for (int i = 0; i < nthreads; i++) pthread_create(&th[i], NULL, worker, &n);
    for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
    printf("threads done\n");
}

static void named(const char *name, int n) {
    for (int i = 0; i < n; i++) {
        dt_tensor *t = dt_zeros(DT_SHAPE(2), DT_F32, dt_cpu_device());
        dt_set_name(t, name);
        dt_free(t);
    }
}

/* How much of this process's devtrace ring (the default 8 MiB, after its
 * header page) is mapped past its first 2 MiB, in KiB; -1 when not found.
 * That part is the one anonymous mapping of 6 MiB marked for huge pages
 * (VmFlags hg); a kernel without them leaves the ring whole (8 MiB and a
 * page), and then it is what of it is mapped past 2 MiB and the header. */
static long ring_far_kb(void) {
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    long found = -1, whole = -1, rss = 0, kb;
    unsigned long size = 0;
    int anon = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        int end = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s%n", &lo, &hi, &end) == 2 && end > 0) { /* a mapping's first line */
            size = hi - lo;
            anon = line[end + strspn(line + end, " ")] == '\n';
        } else if (anon && sscanf(line, "Rss: %ld kB", &kb) == 1) {
            rss = kb;
        } else if (anon && strncmp(line, "VmFlags:", 8) == 0) {
            if (size == 6u << 20 && strstr(line, " hg")) found = rss;
            if (size == (8u << 20) + 4096) whole = rss > 2048 + 4 ? rss - 2048 - 4 : 0;
            anon = 0;
        }
    }
    if (f) fclose(f);
    return found >= 0 ? found : whole;
}

/* n named tensors (3 events each), 25 to a millisecond: a program the writer
 * keeps up with. Prints how much of its ring is mapped at the end. */
static void paced(int n) {
    for (int i = 0; i < n; i += 25) {
        named("paced", n - i < 25 ? n - i : 25);
        usleep(1000);
    }
    printf("ring mapped past 2 MiB: %ld KiB\n", ring_far_kb());
}

/* Ops nested `levels` deep, op 900010 + level each making one output after
 * the ops inside it ended. Begun inside the outermost op, every one of them
 * and every output takes its stack, the 4 kept deep and those deeper. */
__attribute__((noinline)) static void nested(int level, int levels) {
    if (level == levels) return;
    struct dtp_op op = {.seq = 900010 + (uint64_t)level, .name = "nested_op"};
    dtp_op_begin(&op);
    nested(level + 1, levels);
    int64_t shape[1] = {1}, strides[1] = {1};
    struct dtp_tensor t = {.id = 990010 + (uint64_t)level,
                           .storage_id = 990010 + (uint64_t)level,
                           .ndim = 1,
                           .shape = shape,
                           .strides = strides,
                           .nbytes = 4};
    struct dtp_origin o = {.kind = DTP_ORIGIN_OP_OUTPUT, .what = "nested_op", .op_seq = op.seq};
    dtp_tensor_created(&t, &o);
    dtp_op_end(op.seq, op.name, 0, 1, &t.id);
    __asm__ volatile("" ::: "memory"); /* no tail call: each level keeps its frame */
}

/* Ops as the writer meets them at their edges: one open across a commit
 * (its row is committed before its end comes), one whose inner op never
 * ended, one listing as output a tensor it did not create, and nested ops
 * making outputs. */
static void slowop(void) {
    dt_tensor *a = dt_zeros(DT_SHAPE(2), DT_F32, dt_cpu_device());
    struct dtp_arg arg = {.name = "self", .id = dt_id(a), .device = {DTP_DEVICE_CPU, 0}};
    struct dtp_op slow = {.seq = 900001, .name = "slow_op", .nargs = 1, .args = &arg};
    dtp_op_begin(&slow);
    usleep(1000 * 1000); /* many commit windows, on a loaded machine under ASan too (200 ms was not) */
    uint64_t out = dt_id(a);
    dtp_op_end(slow.seq, slow.name, 0, 1, &out);
    struct dtp_op outer = {.seq = 900002, .name = "outer_op", .nargs = 1, .args = &arg};
    struct dtp_op inner = {.seq = 900003, .name = "inner_op", .nargs = 1, .args = &arg};
    dtp_op_begin(&outer);
    dtp_op_begin(&inner);
    dtp_op_end(outer.seq, outer.name, 2, 0, NULL);
    nested(0, 6);
    /* inside an op, the runtime's events take the op's stack; once an error
     * was raised in it (the program's handler may never return into the
     * op), they unwind for themselves again */
    struct dtp_op failing = {.seq = 900020, .name = "failing_op"};
    dtp_op_begin(&failing);
    dtp_tensor_named(dt_id(a), "inside_op");
    dtp_error(failing.name, 1, "a test error");
    dtp_tensor_named(dt_id(a), "after_error");
    dtp_op_end(failing.seq, failing.name, 1, 0, NULL);
    dt_free(a);
    printf("slowop done\n");
}

/* Probes fired with errno set, from call sites never unwound before (the
 * tracer's first ring, libunwind's first look at each address): prints how
 * many calls came back with errno changed. */
__attribute__((noinline)) static int errno_after(int i) {
    int64_t shape[1] = {4}, strides[1] = {1};
    struct dtp_tensor t = {
        .id = 900000 + (uint64_t)i, .storage_id = 900000, .ndim = 1, .shape = shape, .strides = strides, .nbytes = 16};
    struct dtp_origin o = {.kind = 0, .what = "zeros"};
    int changed = 0;
    errno = 4242;
    dtp_tensor_created(&t, &o);
    changed += errno != 4242;
    errno = 4242;
    dtp_tensor_freed(t.id);
    changed += errno != 4242;
    return changed;
}

static void errno_kept(void) {
    int changed = 0;
    for (int i = 0; i < 1000; i++) changed += errno_after(i);
    printf("errno changed by %d probe calls\n", changed);
}

/* A long run for the flight recorder (DEVTRACE_MAX_MB): a weight moved to
 * the GPU once and a cpu tensor kept from the start as a view of a tensor
 * freed at once (its chain runs through a freed tensor), then n steps of a
 * batch made on the cpu, moved, used and freed; then the cpu tensor meets
 * the GPU (a mismatch at the last step), or, killed, SIGKILL. */
static void flight(long n, int killed) {
    dt_set_error_handler(dt_error_handler_return, NULL, NULL);
    dt_device cpu = dt_cpu_device();
    dt_tensor *w = dt_randn(DT_SHAPE(4, 4), cpu);
    dt_set_name(w, "weight");
    dt_tensor *wg = dt_to(w, DEV);
    dt_free(w);
    dt_tensor *base = dt_ones(DT_SHAPE(4, 4), DT_F32, cpu); /* flight: origin */
    dt_tensor *scale = dt_transpose(base, 0, 1);
    dt_set_name(scale, "scale");
    dt_free(base);
    for (long i = 0; i < n; i++) {
        dt_tensor *x = dt_randn(DT_SHAPE(2, 4), cpu);
        dt_tensor *xg = dt_to(x, DEV); /* flight: move */
        dt_tensor *y = dt_linear(xg, wg, NULL);
        dt_free(y), dt_free(xg), dt_free(x);
    }
    if (killed) raise(SIGKILL);
    dt_tensor *x = dt_randn(DT_SHAPE(2, 4), cpu);
    dt_tensor *xg = dt_to(x, DEV);
    dt_tensor *bad = dt_matmul(xg, scale); /* flight: mismatch */
    printf("flight %ld steps, mismatch %s\n", n, bad ? "missed" : "recorded");
    dt_free(xg), dt_free(x), dt_free(scale), dt_free(wg);
}

/* What the flight recorder may not prune: n tensors kept alive, each a
 * view of a tensor freed at once; killed with them alive (several commit
 * windows later), so that the trace shows what pruning left of them. */
static void flight_hoard(long n) {
    for (long i = 0; i < n; i++) {
        dt_tensor *base = dt_zeros(DT_SHAPE(2, 2), DT_F32, dt_cpu_device());
        dt_transpose(base, 0, 1); /* alive until the end */
        dt_free(base);
    }
    usleep(300 * 1000);
    raise(SIGKILL);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "basic";
    setvbuf(stdout, NULL, _IONBF, 0);
    if (strcmp(mode, "basic") == 0) {
        basic();
    } else if (strcmp(mode, "threads") == 0) {
        threads(argc > 2 ? atoi(argv[2]) : 8, argc > 3 ? atoi(argv[3]) : 1000);
    } else if (strcmp(mode, "fork") == 0) {
        named("parent_before", 5);
        usleep(50 * 1000); /* the writer has written the module table: the child inherits it written */
        pid_t pid = fork();
        if (pid == 0) {
            named("child_only", 7);
            printf("child %d\n", (int)getpid());
            exit(0);
        }
        int st;
        waitpid(pid, &st, 0);
        named("parent_after", 3);
        printf("fork done\n");
    } else if (strcmp(mode, "abort") == 0 || strcmp(mode, "segv") == 0) {
        named("before_crash", 1000);
        if (mode[0] == 'a') abort();
        volatile int *volatile p = (volatile int *)(uintptr_t)8; /* a real fault, not a null UBSan would catch */
        *p = 1;
    } else if (strcmp(mode, "mismatch_segv") == 0) {
        /* a device mismatch the program goes on from (its handler returns), then a crash */
        dt_sim_cuda_enable(1);
        dt_set_error_handler(dt_error_handler_return, NULL, NULL);
        dt_tensor *a = dt_ones(DT_SHAPE(4), DT_F32, dt_cuda_device(0)),
                  *b = dt_ones(DT_SHAPE(4), DT_F32, dt_cpu_device());
        dt_tensor *c = dt_add(a, b); /* devtrace: mismatch */
        printf("mismatch %s\n", c ? "missed" : "recorded");
        usleep(20 * 1000);
        volatile int *volatile p = (volatile int *)(uintptr_t)8;
        *p = 1; /* devtrace: crash */
    } else if (strcmp(mode, "flight_hoard") == 0 && argc > 2 && atol(argv[2]) > 0) {
        flight_hoard(atol(argv[2]));
    } else if ((strcmp(mode, "flight") == 0 || strcmp(mode, "flight_kill") == 0) && argc > 2) {
        flight(atol(argv[2]), mode[6] == '_');
    } else if (strcmp(mode, "sigkill") == 0) {
        named("before_kill", 100);
        usleep(300 * 1000); /* several commit windows */
        named("in_last_window", 1);
        raise(SIGKILL);
    } else if (strcmp(mode, "exit") == 0) {
        named("x", 1);
        printf("exiting with %s\n", argv[2]);
        return atoi(argv[2]);
    } else if (strcmp(mode, "dlopen") == 0) {
        void *h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            printf("dlopen failed: %s\n", dlerror());
            return 3;
        }
        named("while_loaded", 1);
        usleep(100 * 1000);
        dlclose(h);
        named("after_unload", 1);
    } else if (strcmp(mode, "fulldisk") == 0) {
        /* a 4 MiB file size limit stands in for a full disk, reached after a
         * first phase had time to be committed */
        named("before_full", 10);
        usleep(200 * 1000);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {4 << 20, 4 << 20};
        setrlimit(RLIMIT_FSIZE, &rl);
        dt_tensor *sum = dt_zeros(DT_SCALAR, DT_F32, dt_cpu_device());
        for (int i = 0; i < 400000; i++) {
            dt_tensor *t = dt_ones(DT_SCALAR, DT_F32, dt_cpu_device());
            dt_add_(sum, t);
            dt_free(t);
        }
        printf("sum %.0f\n", dt_item(sum));
        dt_free(sum);
    } else if (strcmp(mode, "fsize") == 0) {
        /* the trace reaches RLIMIT_FSIZE with SIGXFSZ at its default: the
         * tracer wrote past it, not the program, which must not die of it;
         * with a file name, the program then writes past it itself and
         * must get its SIGXFSZ as it would untraced */
        named("before_limit", 10);
        usleep(200 * 1000);
        struct rlimit rl = {4 << 20, 4 << 20};
        setrlimit(RLIMIT_FSIZE, &rl);
        dt_tensor *sum = dt_zeros(DT_SCALAR, DT_F32, dt_cpu_device());
        for (int i = 0; i < 400000; i++) {
            dt_tensor *t = dt_ones(DT_SCALAR, DT_F32, dt_cpu_device());
            dt_add_(sum, t);
            dt_free(t);
        }
        printf("sum %.0f\n", dt_item(sum));
        dt_free(sum);
        if (argc > 2) {
            static char block[1 << 16];
            FILE *f = fopen(argv[2], "w");
            for (int i = 0; f && i < 128; i++) fwrite(block, 1, sizeof block, f), fflush(f);
            printf("wrote past the limit and lived\n");
        }
    } else if (strcmp(mode, "vfork") == 0) {
        named("x", 1);
        pid_t pid = vfork();
        if (pid == 0) _exit(127); /* as posix_spawn's child does when exec fails */
        int st;
        waitpid(pid, &st, 0);
        printf("vfork child %d\n", WEXITSTATUS(st));
        return 3; /* from main: unseen by the exit wrapper */
    } else if (strcmp(mode, "writer_cpus") == 0) {
        writer_cpus();
    } else if (strcmp(mode, "train") == 0) {
        train();
    } else if (strcmp(mode, "slowop") == 0) {
        slowop();
    } else if (strcmp(mode, "exec") == 0 && argc > 2) {
        named("before_exec", 4);
        execv(argv[2], argv + 2);
        printf("exec failed\n");
        named("after_failed_exec", 1);
        return 5;
    } else if (strcmp(mode, "errno") == 0) {
        errno_kept();
    } else if (strcmp(mode, "paced") == 0) {
        paced(argc > 2 ? atoi(argv[2]) : 15000);
    } else if (strcmp(mode, "stall") == 0) {
        /* a burst once a byte arrives on stdin: the test stops the tracer's
         * writer thread first (ptrace), so the ring fills with nobody to
         * drain it */
        named("before_stall", 10);
        char c;
        if (read(0, &c, 1) != 1) return 3;
        named("stall", argc > 2 ? atoi(argv[2]) : 100000);
        printf("burst done\n");
    } else if (strcmp(mode, "burst_mismatch") == 0) {
        /* two mismatches: one whose operand was made before a burst (that a
         * small ring in lossy mode drops part of), one after it */
        dt_sim_cuda_enable(1);
        dt_set_error_handler(dt_error_handler_return, NULL, NULL);
        dt_tensor *before = dt_ones(DT_SHAPE(4), DT_F32, dt_cpu_device());
        dt_set_name(before, "made_before");
        named("burst", argc > 2 ? atoi(argv[2]) : 100000);
        usleep(200 * 1000); /* the writer drains the ring */
        dt_tensor *after = dt_ones(DT_SHAPE(4), DT_F32, dt_cpu_device());
        dt_set_name(after, "made_after");
        dt_tensor *a = dt_ones(DT_SHAPE(4), DT_F32, dt_cuda_device(0));
        dt_tensor *c1 = dt_add(a, before), *c2 = dt_add(a, after);
        printf("mismatches %s\n", c1 || c2 ? "missed" : "recorded");
        dt_free(c1), dt_free(c2), dt_free(a), dt_free(after), dt_free(before);
    } else if (strcmp(mode, "producer_failed") == 0) {
        /* a producer (an adapter) tells the tracer it failed inside itself */
        named("before_failure", 3);
        dtp_producer_failed("the test's producer failed (\x1b[31mred\x1b[0m)");
        named("after_failure", 3);
        printf("producer done\n");
    } else if (strcmp(mode, "source_facts") == 0) {
        /* a producer's facts about a source: one repeated (kept once), two
         * values of one key, and calls outside the contract (ignored) */
        named("with_facts", 1);
        for (int i = 0; i < 2; i++) {
            dtp_source_fact("prog.py", 0, "sha256", "00ff");
            dtp_source_fact("prog.py", 3, "stmt", "3 4");
            dtp_source_fact("prog.py", 4, "stmt", "3 4");
            dtp_source_fact("prog.py", 3, "call", "torch.ones\t\t1\t3\t20\t1");
            dtp_source_fact("prog.py", 3, "call", "x.to\tdevice\t0\t4\t9\t1");
            dtp_source_fact("lib/other.py", 3, "stmt", "3 3");
        }
        dtp_source_fact(NULL, 1, "stmt", "1 1");
        dtp_source_fact("prog.py", -1, "stmt", "1 1");
        dtp_source_fact("prog.py", 1, NULL, "1 1");
        dtp_source_fact("prog.py", 1, "stmt", NULL);
        /* roles (ABI 4): one known, one this tracer does not know (skipped), one of no tensor (ignored) */
        dt_tensor *param = dt_zeros(DT_SHAPE(2), DT_F32, dt_cpu_device()), *state = dt_zeros_like(param);
        dtp_tensor_role(dt_id(state), DTP_ROLE_OPTIMIZER_STATE, dt_id(param), "exp_avg");
        dtp_tensor_role(dt_id(state), 99, dt_id(param), "future");
        dtp_tensor_role(0, DTP_ROLE_OPTIMIZER_STATE, dt_id(param), "none");
        dt_free(param), dt_free(state);
        printf("facts done\n");
    } else if (strcmp(mode, "burst") == 0) {
        named("burst", argc > 2 ? atoi(argv[2]) : 100000);
        printf("burst done\n");
    } else {
        fprintf(stderr, "trace_target: unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
