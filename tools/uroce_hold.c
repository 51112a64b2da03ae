/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * uroce-hold PROGRAM [ARGS...]: opens every uroce device, so that this
 * process has a device tree, and runs PROGRAM as its child (`uroce run
 * --hold`). Tools that only read /sys/class/infiniband and never open a
 * device (ibstat, ibstatus, show_gids) see the tree of their nearest
 * ancestor that has one (the interposer's rule): this one. The exit
 * status is PROGRAM's (128 + signal if a signal ended it); SIGINT, SIGTERM
 * and SIGHUP are passed on to it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static volatile pid_t child;

static void pass_on(int sig)
{
	if (child > 0)
		kill(child, sig);
}

int main(int argc, char **argv)
{
	struct ibv_context **ctx = NULL;
	struct ibv_device **devs;
	struct sigaction sa;
	int n = 0, i, status;
	pid_t pid;

	if (argc < 2) {
		fprintf(stderr, "usage: uroce-hold PROGRAM [ARGS...]\n");
		return 2;
	}
	devs = ibv_get_device_list(&n);
	if (devs && n > 0)
		ctx = calloc((size_t)n, sizeof(*ctx));
	for (i = 0; ctx && i < n; i++) {
		ctx[i] = ibv_open_device(devs[i]);
		if (!ctx[i])
			fprintf(stderr, "uroce-hold: %s: %s\n",
				ibv_get_device_name(devs[i]), strerror(errno));
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = pass_on;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	pid = fork();
	if (pid < 0) {
		perror("uroce-hold: fork");
		return 1;
	}
	if (pid == 0) {
		execvp(argv[1], argv + 1);
		fprintf(stderr, "uroce-hold: %s: %s\n", argv[1], strerror(errno));
		_exit(127);
	}
	child = pid;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			perror("uroce-hold: waitpid");
			return 1;
		}
	}

	for (i = 0; ctx && i < n; i++)
		if (ctx[i])
			ibv_close_device(ctx[i]);
	free(ctx);
	if (devs)
		ibv_free_device_list(devs);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
