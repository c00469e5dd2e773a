/*
 * resolve: the DNS client of the e2e cluster's pods, built twice from this
 * file: against glibc (dynamic, Debian's libc) and against musl (static),
 * so that both resolvers real pods use are exercised with the resolv.conf
 * kubelet writes. Every lookup is getaddrinfo(3), as applications do.
 *
 *   resolve idle                       wait for SIGTERM (a pod's main process,
 *                                      and the pause image's sandbox process:
 *                                      it reaps nothing, so it never spins on
 *                                      wait4's ECHILD)
 *   resolve lookup [-4|-6] [-n N] NAME...
 *       one line per name: "NAME ADDR..." (sorted, unique) or
 *       "NAME FAIL <error>"; with -n, the list N times and a last line
 *       "total ok=N fail=N". Exit 1 if any lookup failed.
 *   resolve loop -rate R [-threads T] NAME...
 *       until SIGTERM, T threads together make R lookups a second over the
 *       names; every wall-clock second "tick <unix ms> ok=N fail=N maxms=N"
 *       (lookups completed in that second), each failure at once as
 *       "fail <unix ms started> NAME <ms> <error>", each success slower
 *       than a second as "slow <unix ms started> NAME <ms>"; at the end
 *       "total ok=N fail=N slow=N".
 *       A name with "{n}" in it is a new name at every lookup: "{n}" becomes
 *       "A-B-C", the octets of a 24-bit counter that starts from the clock,
 *       so that no cache can hold it (10-{n}.ns.pod.cluster.local. is a pod
 *       record any cluster DNS with "pods insecure" answers).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

/* emit writes one whole line to stdout, at once, whatever thread calls. */
static void emit(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof line - 2)
		n = sizeof line - 2;
	line[n++] = '\n';
	pthread_mutex_lock(&out_mu);
	if (write(STDOUT_FILENO, line, n) < 0) {
		/* nothing to do: stdout is the only channel */
	}
	pthread_mutex_unlock(&out_mu);
}

static long long now_ms(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * lookup resolves name and writes its sorted, unique addresses into buf
 * (space-separated). It returns 0, or getaddrinfo's error.
 */
static int lookup(const char *name, int family, char *buf, size_t len)
{
	struct addrinfo hints, *res, *ai;
	char addrs[64][INET6_ADDRSTRLEN];
	char *sorted[64];
	int n = 0, err, i;
	size_t used = 0;

	memset(&hints, 0, sizeof hints);
	hints.ai_family = family;
	hints.ai_socktype = SOCK_STREAM;
	err = getaddrinfo(name, NULL, &hints, &res);
	if (err != 0)
		return err;
	for (ai = res; ai != NULL && n < 64; ai = ai->ai_next) {
		if (getnameinfo(ai->ai_addr, ai->ai_addrlen, addrs[n], sizeof addrs[n],
				NULL, 0, NI_NUMERICHOST) == 0) {
			sorted[n] = addrs[n];
			n++;
		}
	}
	freeaddrinfo(res);
	qsort(sorted, n, sizeof sorted[0], cmp_str);
	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		if (i > 0 && strcmp(sorted[i], sorted[i - 1]) == 0)
			continue;
		used += snprintf(buf + used, used < len ? len - used : 0, " %s", sorted[i]);
	}
	return 0;
}

static const char *errtext(int err)
{
	if (err == EAI_SYSTEM)
		return strerror(errno);
	return gai_strerror(err);
}

static int cmd_lookup(int argc, char **argv)
{
	int family = AF_UNSPEC, repeat = 1, ok = 0, fail = 0, opt, r, i;
	char buf[4096];

	while ((opt = getopt(argc, argv, "46n:")) != -1) {
		switch (opt) {
		case '4':
			family = AF_INET;
			break;
		case '6':
			family = AF_INET6;
			break;
		case 'n':
			repeat = atoi(optarg);
			break;
		default:
			return 2;
		}
	}
	if (optind >= argc || repeat < 1) {
		fprintf(stderr, "usage: resolve lookup [-4|-6] [-n N] NAME...\n");
		return 2;
	}
	for (r = 0; r < repeat; r++) {
		for (i = optind; i < argc; i++) {
			int err = lookup(argv[i], family, buf, sizeof buf);

			if (err == 0) {
				ok++;
				emit("%s%s", argv[i], buf);
			} else {
				fail++;
				emit("%s FAIL %s", argv[i], errtext(err));
			}
		}
	}
	if (repeat > 1)
		emit("total ok=%d fail=%d", ok, fail);
	return fail == 0 ? 0 : 1;
}

/* The loop's shared state: the names, the pace and the counters. */
static struct {
	char **names;
	int nnames;
	double interval_ns; /* between one thread's lookups */
	volatile sig_atomic_t stop;
	pthread_mutex_t mu;
	long long sec;     /* the wall-clock second being counted */
	int ok, fail, maxms;
	long long total_ok, total_fail, total_slow;
	unsigned next;     /* the next name */
	unsigned fresh;    /* the counter of "{n}" */
} L = {.mu = PTHREAD_MUTEX_INITIALIZER};

/*
 * expand writes name into buf with its "{n}" (if any) replaced by the
 * octets of n, and returns buf.
 */
static const char *expand(const char *name, unsigned n, char *buf, size_t len)
{
	const char *at = strstr(name, "{n}");

	if (at == NULL)
		return name;
	snprintf(buf, len, "%.*s%u-%u-%u%s", (int)(at - name), name,
		 (n >> 16) & 255, (n >> 8) & 255, n & 255, at + 3);
	return buf;
}

/* flush_tick prints the finished second's tick; L.mu is held. */
static void flush_tick(long long sec)
{
	if (L.sec != 0 && sec != L.sec)
		emit("tick %lld ok=%d fail=%d maxms=%d", L.sec * 1000, L.ok, L.fail, L.maxms);
	if (sec != L.sec) {
		L.sec = sec;
		L.ok = L.fail = L.maxms = 0;
	}
}

static void record(const char *name, long long started, int ms, int err)
{
	pthread_mutex_lock(&L.mu);
	flush_tick(now_ms(CLOCK_REALTIME) / 1000);
	if (ms > L.maxms)
		L.maxms = ms;
	if (err == 0) {
		L.ok++;
		L.total_ok++;
		if (ms > 1000) {
			L.total_slow++;
			emit("slow %lld %s %d", started, name, ms);
		}
	} else {
		L.fail++;
		L.total_fail++;
		emit("fail %lld %s %d %s", started, name, ms, errtext(err));
	}
	pthread_mutex_unlock(&L.mu);
}

static void add_ns(struct timespec *t, double ns)
{
	long long v = (long long)t->tv_nsec + (long long)ns;

	t->tv_sec += v / 1000000000LL;
	t->tv_nsec = v % 1000000000LL;
}

static double ts_diff_ns(const struct timespec *a, const struct timespec *b)
{
	return (double)(a->tv_sec - b->tv_sec) * 1e9 + (double)(a->tv_nsec - b->tv_nsec);
}

/* worker makes its share of the lookups on absolute deadlines. */
static void *worker(void *arg)
{
	struct timespec next, now;
	char buf[4096], expanded[256];

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!L.stop) {
		const char *name;
		long long started, t0;
		int err;

		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		if (L.stop)
			break;
		pthread_mutex_lock(&L.mu);
		name = expand(L.names[L.next++ % L.nnames], L.fresh++, expanded, sizeof expanded);
		pthread_mutex_unlock(&L.mu);
		started = now_ms(CLOCK_REALTIME);
		t0 = now_ms(CLOCK_MONOTONIC);
		err = lookup(name, AF_UNSPEC, buf, sizeof buf);
		record(name, started, (int)(now_ms(CLOCK_MONOTONIC) - t0), err);
		add_ns(&next, L.interval_ns);
		/* Late by more than a second: catch up one second, no more. */
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (ts_diff_ns(&now, &next) > 1e9) {
			next = now;
			add_ns(&next, -1e9 + L.interval_ns);
		}
	}
	return NULL;
}

static void on_stop(int sig)
{
	(void)sig;
	L.stop = 1;
}

static int cmd_loop(int argc, char **argv)
{
	int rate = 0, threads = 4, i;
	pthread_t tids[64];
	struct sigaction sa;

	/* Go-style flags, as the pods' commands spell them: -rate R -threads T. */
	for (i = 1; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (strcmp(argv[i], "-rate") == 0)
			rate = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "-threads") == 0)
			threads = atoi(argv[i + 1]);
		else
			break;
	}
	optind = i;
	if (optind >= argc || rate < 1 || threads < 1 || threads > 64) {
		fprintf(stderr, "usage: resolve loop -rate R [-threads T] NAME...\n");
		return 2;
	}
	L.names = argv + optind;
	L.nnames = argc - optind;
	L.interval_ns = 1e9 * threads / rate;
	/* A restarted client asks names it has not asked in the last hours. */
	L.fresh = (unsigned)(now_ms(CLOCK_REALTIME) / 1000 * 150);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	for (i = 0; i < threads; i++)
		pthread_create(&tids[i], NULL, worker, NULL);
	/* The main thread prints each second's tick even when no lookup ends. */
	while (!L.stop) {
		struct timespec tick = {0, 100 * 1000 * 1000};

		nanosleep(&tick, NULL);
		pthread_mutex_lock(&L.mu);
		flush_tick(now_ms(CLOCK_REALTIME) / 1000);
		pthread_mutex_unlock(&L.mu);
	}
	for (i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	pthread_mutex_lock(&L.mu);
	flush_tick(L.sec + 1);
	emit("total ok=%lld fail=%lld slow=%lld", L.total_ok, L.total_fail, L.total_slow);
	pthread_mutex_unlock(&L.mu);
	return 0;
}

static int cmd_idle(void)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sigwait(&set, &sig);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "idle") == 0)
		return cmd_idle();
	if (argc >= 2 && strcmp(argv[1], "lookup") == 0)
		return cmd_lookup(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "loop") == 0)
		return cmd_loop(argc - 1, argv + 1);
	fprintf(stderr, "usage: resolve idle | lookup [-4|-6] [-n N] NAME... | loop -rate R [-threads T] NAME...\n");
	return 2;
}
