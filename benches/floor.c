/* The machine's floor for tensorop's work, used by benches/e2e.py.
 *
 *   floor copy A.npy B.npy OUT.npy   read(2) both inputs in 4 MiB chunks, subtract as float32,
 *                                    write(2) the result: the least a file-to-file sub can cost
 *   floor copy-mt A.npy B.npy OUT.npy [THREADS]
 *                                    the same with one thread per core (or THREADS): each thread
 *                                    preads both inputs in 1 M-element chunks, subtracts and
 *                                    pwrites its chunk at its offset (OpenMP, dynamic schedule)
 *   floor stream N                   STREAM-style c[i] = a[i] - b[i] over N floats on all cores
 *                                    (OpenMP if built with -fopenmp), prints GB/s counting three
 *                                    arrays
 */
#include <fcntl.h>
#include <sys/stat.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (4 << 20)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static long read_full(int fd, char *buf, long n) {
    long got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0) break;
        got += r;
    }
    return got;
}

static int copy(const char *a, const char *b, const char *out) {
    int fa = open(a, O_RDONLY), fb = open(b, O_RDONLY);
    int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fa < 0 || fb < 0 || fo < 0) { perror("open"); return 1; }
    float *x = malloc(CHUNK), *y = malloc(CHUNK);
    /* Both headers are copied as they are: the files are the same shape. */
    long n;
    while ((n = read_full(fa, (char *)x, CHUNK)) > 0) {
        if (read_full(fb, (char *)y, n) != n) { fprintf(stderr, "short read\n"); return 1; }
        for (long i = 0; i < n / 4; i++) x[i] -= y[i];
        if (write(fo, x, n) != n) { perror("write"); return 1; }
    }
    close(fo);
    return 0;
}

static long pread_full(int fd, char *buf, long n, long off) {
    long got = 0;
    while (got < n) {
        ssize_t r = pread(fd, buf + got, n - got, off + got);
        if (r <= 0) break;
        got += r;
    }
    return got;
}

static int copy_mt(const char *a, const char *b, const char *out, int threads) {
    int fa = open(a, O_RDONLY), fb = open(b, O_RDONLY);
    int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fa < 0 || fb < 0 || fo < 0) { perror("open"); return 1; }
    struct stat st;
    if (fstat(fa, &st) != 0 || ftruncate(fo, st.st_size) != 0) { perror("size"); return 1; }
    long chunks = (st.st_size + CHUNK - 1) / CHUNK;
    int failed = 0;
#ifdef _OPENMP
    if (threads > 0) omp_set_num_threads(threads);
#else
    (void)threads;
#endif
#pragma omp parallel reduction(| : failed)
    {
        float *x = malloc(CHUNK), *y = malloc(CHUNK);
#pragma omp for schedule(dynamic, 1)
        for (long c = 0; c < chunks; c++) {
            long off = c * (long)CHUNK;
            long n = pread_full(fa, (char *)x, CHUNK, off);
            if (pread_full(fb, (char *)y, n, off) != n) { failed = 1; continue; }
            for (long i = 0; i < n / 4; i++) x[i] -= y[i];
            if (pwrite(fo, x, n, off) != n) failed = 1;
        }
        free(x);
        free(y);
    }
    close(fo);
    if (failed) fprintf(stderr, "short read or write\n");
    return failed;
}

static int stream(long n) {
    float *a = malloc(n * 4), *b = malloc(n * 4), *c = malloc(n * 4);
    for (long i = 0; i < n; i++) { a[i] = i; b[i] = 1; c[i] = 0; }
    double best = 1e9;
    for (int rep = 0; rep < 10; rep++) {
        double t = now();
#pragma omp parallel for
        for (long i = 0; i < n; i++) c[i] = a[i] - b[i];
        t = now() - t;
        if (t < best) best = t;
    }
    printf("%.2f\n", 3.0 * n * 4 / best / 1e9);
    return c[n - 1] == n - 2 ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "copy")) return copy(argv[2], argv[3], argv[4]);
    if ((argc == 5 || argc == 6) && !strcmp(argv[1], "copy-mt"))
        return copy_mt(argv[2], argv[3], argv[4], argc == 6 ? atoi(argv[5]) : 0);
    if (argc == 3 && !strcmp(argv[1], "stream")) return stream(atol(argv[2]));
    fprintf(stderr, "usage: floor copy A B OUT | floor copy-mt A B OUT [THREADS] | floor stream N\n");
    return 2;
}
