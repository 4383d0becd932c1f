/*
 * fence.c - the notice a supervisor sends when its agent is gone
 */
#include "common/fence.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FENCE_MAGIC "LSF1 "

void
fence_key(const unsigned char *node_key, int64_t job, int attempt, char *key)
{
    char label[64];

    snprintf(label, sizeof(label), "lockstep-fence-v1 %" PRId64 " %d", job,
        attempt);
    cred_agent_mac((const char *)node_key, CRED_KEY_LEN, label, key);
}

size_t
fence_notice_encode(const char *key, const struct fence_notice *n, char *buf)
{
    char mac[CRED_HEX_LEN + 1];
    int len = snprintf(buf, FENCE_MSG_MAX, FENCE_MAGIC "%s %" PRId64 " %d",
        n->node, n->job, n->attempt);

    cred_agent_mac(key, strlen(key), buf, mac);
    len += snprintf(buf + len, FENCE_MSG_MAX - (size_t)len, " %s", mac);
    return (size_t)len;
}

/* Copy the len bytes of buf to text (NUL-terminated) and find the MAC:
 * *mac points into text at the space before it. */
static int
fence_split(const char *buf, size_t len, char *text, char **mac)
{
    char *sp;

    if (len < sizeof(FENCE_MAGIC) || len >= FENCE_MSG_MAX)
        return -EINVAL;
    memcpy(text, buf, len);
    text[len] = '\0';
    if (strlen(text) != len || strncmp(text, FENCE_MAGIC, 5) != 0)
        return -EINVAL;
    sp = strrchr(text, ' ');
    if (sp == NULL || strlen(sp + 1) != CRED_HEX_LEN)
        return -EINVAL;
    *mac = sp;
    return 0;
}

int
fence_notice_parse(const char *buf, size_t len, struct fence_notice *n)
{
    char text[FENCE_MSG_MAX], *mac, *s, *sp, *end;
    long long job;
    long att;
    size_t nl;
    int rc;

    if ((rc = fence_split(buf, len, text, &mac)) < 0)
        return rc;
    *mac = '\0';
    s = text + 5;
    if ((sp = strchr(s, ' ')) == NULL)
        return -EINVAL;
    nl = (size_t)(sp - s);
    if (nl == 0 || nl > PROTO_NODE_NAME_MAX)
        return -EINVAL;
    memcpy(n->node, s, nl);
    n->node[nl] = '\0';
    if (sp[1] < '0' || sp[1] > '9')
        return -EINVAL;
    errno = 0;
    job = strtoll(sp + 1, &end, 10);
    if (errno != 0 || *end != ' ' || job <= 0 || end[1] < '0' || end[1] > '9')
        return -EINVAL;
    att = strtol(end + 1, &end, 10);
    if (errno != 0 || *end != '\0' || att < 0 || att > INT32_MAX)
        return -EINVAL;
    n->job = job;
    n->attempt = (int)att;
    return 0;
}

int
fence_notice_verify(const char *key, const char *buf, size_t len)
{
    char text[FENCE_MSG_MAX], mac[CRED_HEX_LEN + 1], *sp;
    int rc;

    if ((rc = fence_split(buf, len, text, &sp)) < 0)
        return rc;
    *sp = '\0';
    cred_agent_mac(key, strlen(key), text, mac);
    return cred_equal(mac, sp + 1) ? 0 : -EBADMSG;
}
