/*
 * pause: the sandbox process of every pod of the e2e cluster. It holds the
 * pod's namespaces and waits for SIGTERM or SIGINT. It reaps no children:
 * a pod's pause has none, and a wait4(-1) loop would spin on ECHILD.
 */
#include <signal.h>
#include <stddef.h>

int main(void)
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
