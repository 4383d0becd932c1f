/*
 * buildinfo.h - which build of lockstepd this is
 *
 * The version lockstepd reports (--version, GET /v1/health, the metrics'
 * lockstep_build_info, webhooks, its start-up line) comes from this one
 * function, defined in buildinfo.c, which is linked into the executable
 * beside the scheduler's libraries. tests/meson.build links a second copy
 * of lockstepd, lockstepd-alt, with buildinfo.c compiled to report
 * "<version>+alt": a different binary on the same code, which t5003 swaps
 * in under running jobs.
 */
#ifndef SCHEDULER_BUILDINFO_H
#define SCHEDULER_BUILDINFO_H

/* The version string; static, never NULL. Any thread. */
const char *buildinfo_version(void);

#endif
