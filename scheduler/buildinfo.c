/*
 * buildinfo.c - which build of lockstepd this is (buildinfo.h)
 *
 * BUILDINFO_SUFFIX, empty unless the build defines it, is appended to the
 * project's version: lockstepd-alt (tests/meson.build) defines "+alt".
 */
#include "scheduler/buildinfo.h"

#include "version.h"

#ifndef BUILDINFO_SUFFIX
#define BUILDINFO_SUFFIX ""
#endif

const char *
buildinfo_version(void)
{
    return LOCKSTEP_VERSION BUILDINFO_SUFFIX;
}
