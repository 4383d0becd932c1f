/*
 * sched_policy.c - the scheduling policies, by name
 *
 * The `sched_policy` key of the configuration (docs/config.md) names one
 * of these, as OpenSMTPD names its scheduler backend. Each policy is a
 * file of its own (sched_<name>.c) behind struct sched_policy.
 */
#include "scheduler/sched_pass.h"

#include <stddef.h>
#include <string.h>

static const struct sched_policy *const sched_policies[] = {
    &sched_policy_fifo,
    &sched_policy_spread,
};

const struct sched_policy *
sched_policy_find(const char *name)
{
    for (size_t i = 0; i < sizeof(sched_policies) / sizeof(*sched_policies);
         i++) {
        if (strcmp(sched_policies[i]->name, name) == 0)
            return sched_policies[i];
    }
    return NULL;
}

const char *
sched_policy_names(void)
{
    return "fifo, spread";
}
