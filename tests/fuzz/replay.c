/*
** replay.c -- a main() for a fuzz target without libFuzzer: every file
** named on the command line (a directory: every file in it) is fed to
** LLVMFuzzerTestOneInput once, in name order.  `make check` links each
** target with it and replays the seed corpus and the regressions
** (tests/fuzz/regress/<target>/: inputs that once failed) on the plain
** and the sanitized build, so a fixed bug stays fixed on any compiler.
** A failing input aborts with the target's message; FUZZ_VERBOSE=1 names
** each file before it is fed, to tell which one it was.
*/
#include "fuzz.h"

#include <dirent.h>
#include <sys/stat.h>

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    rcp_buf b;
    char chunk[65536];
    size_t n;
    FZ_ASSERT(f != NULL, "cannot open %s", path);
    rcp_buf_init(&b);
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        rcp_buf_put(&b, chunk, n);
    FZ_ASSERT(!ferror(f) && !b.oom, "cannot read %s", path);
    fclose(f);
    if (getenv("FUZZ_VERBOSE"))
        fprintf(stderr, "  %s\n", path);
    LLVMFuzzerTestOneInput((const uint8_t *)(b.data ? b.data : ""), b.len);
    rcp_buf_free(&b);
}

/* The files of dir, sorted, replayed; their number. */
static size_t replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL, path[4096];
    size_t n = 0, cap = 0, i;
    FZ_ASSERT(d != NULL, "cannot open %s", dir);
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            names = realloc(names, cap * sizeof *names);
            FZ_ASSERT(names != NULL, "out of memory");
        }
        names[n] = malloc(strlen(e->d_name) + 1);
        FZ_ASSERT(names[n] != NULL, "out of memory");
        strcpy(names[n++], e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    for (i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        replay_file(path);
        free(names[i]);
    }
    free(names);
    return n;
}

int main(int argc, char **argv)
{
    size_t total = 0;
    int i;
    for (i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0)
            continue;                     /* an absent regress/ directory */
        if (S_ISDIR(sb.st_mode)) {
            total += replay_dir(argv[i]);
        } else {
            replay_file(argv[i]);
            total++;
        }
    }
    printf("%s: %lu inputs replayed, all passed\n", argv[0],
           (unsigned long)total);
    return 0;
}
