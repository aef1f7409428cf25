/*
** benchutil.h -- what the benches that drive the real binary share
** (bench_serve.c, bench_http.c, bench_load.c): a monotonic clock, the
** median of a run's figures, a server of the binary on pipes, and a
** process's resident memory.  Not testutil.h / serverutil.h: those pull
** in Check, and a bench links nothing but the library.  Static inline,
** like serverutil.h: what a bench does not use costs nothing.
*/
#ifndef RCP_BENCHUTIL_H
#define RCP_BENCHUTIL_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v in place. */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* Run argv (searched in PATH) with its stdin and stdout on pipes: *to
** writes its stdin, *from reads its stdout; with err non-NULL, *err reads
** its stderr too (else it inherits ours).  Exits on failure: a bench
** without its server has nothing to measure. */
static inline pid_t bench_spawn(char *const argv[], int *to, int *from,
                                int *err)
{
    int a[2], b[2], e[2] = { -1, -1 };
    pid_t pid;
    if (pipe(a) || pipe(b) || (err && pipe(e)))
        exit(1);
    pid = fork();
    if (pid < 0)
        exit(1);
    if (pid == 0) {
        dup2(a[0], 0);
        dup2(b[1], 1);
        close(a[1]);
        close(b[0]);
        if (err) {
            dup2(e[1], 2);
            close(e[0]);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    close(a[0]);
    close(b[1]);
    /* a server spawned later must not hold this one's pipes open */
    fcntl(a[1], F_SETFD, FD_CLOEXEC);
    fcntl(b[0], F_SETFD, FD_CLOEXEC);
    *to = a[1];
    *from = b[0];
    if (err) {
        close(e[1]);
        fcntl(e[0], F_SETFD, FD_CLOEXEC);
        *err = e[0];
    }
    return pid;
}

/* Resident memory of process pid in MiB (Linux /proc), or -1. */
static inline double rss_mib(pid_t pid)
{
    char path[64], line[256];
    FILE *f;
    long kb = -1;
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    if (!(f = fopen(path, "r")))
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kb) == 1)
            break;
    fclose(f);
    return kb < 0 ? -1 : kb / 1024.0;
}

#endif
