/*
 * uvx.h - libuv helpers the two daemons share
 *
 * Apart from the rest of common/ (its own library, uvx_dep), so that the
 * CLI, which links common, never links libuv.
 */
#ifndef COMMON_UVX_H
#define COMMON_UVX_H

#include <stddef.h>

#include <uv.h>

/* Called once every handle given to uvx_close has closed. */
typedef void uvx_done_fn(void *arg);

/* Close the n (at least one) handles hs and call done(arg) once, after
 * the last of them has closed: the place to free the object that embeds
 * them (done = free), as STYLE 2.4 asks. Overwrites each handle's data.
 * done never runs before this returns. Loop thread only. */
void uvx_close(uv_handle_t *const *hs, size_t n, uvx_done_fn *done, void *arg);
/* uvx_close for one handle. */
void uvx_close_one(uv_handle_t *h, uvx_done_fn *done, void *arg);

#endif
