/*
 * api.h - the HTTP API of lockstepd: routes, authentication, listeners
 *
 * docs/api.md is the reference. The API creates the HTTP server (http.h)
 * on the configured TCP address and Unix socket, routes each request by
 * path pattern ("{}" matches one non-empty segment, handed to the handler
 * as r->arg) and method (a known path with another method is 405, an
 * unknown path 404), authenticates it as the route requires (none, a
 * user, an operator, an agent), and calls the handler (api_req.h). The
 * server's flush hook commits the iteration's transaction before any
 * reply is written (schedd_flush).
 *
 * The API registers itself as the context's node_changed and model_reset
 * hooks (schedd.h): that is how the services tell it that a node's long
 * polls must be answered, without calling up into it.
 */
#ifndef SCHEDULER_API_H
#define SCHEDULER_API_H

#include <stdio.h>

#include "common/err.h"
#include "scheduler/schedd.h"

struct api;

/* Create the server and listen as opts says (writing the bound TCP port to
 * opts->port_file). Returns NULL with err set; nothing is left open. */
struct api *api_create(struct schedd *sd, const struct schedd_opts *opts,
    struct err *err);
/* Stop accepting, answer waiting long polls, close every connection;
 * done(arg) runs once everything is closed (never synchronously), and the
 * api is freed then. */
void api_close(struct api *api, void (*done)(void *), void *arg);
/* Load the TLS certificate and key again from their files (a rotation;
 * on SIGHUP). Connections accepted from now on use them; on failure the
 * old ones stay (logged either way). No-op without TLS. */
void api_tls_reload(struct api *api);

/* Print the route table to f, one route a line: "METHOD PATH ACCESS",
 * ACCESS one of public, metrics (public unless metrics_token_required),
 * user (any user's credential), operator, agent, user_or_agent
 * (lockstepd --dump-routes; the authorization matrix test,
 * tests/fixtures/authz-matrix.json, is checked against it). */
void api_routes_dump(FILE *f);

/* The TCP port the API listens on (0: none). */
int api_port(const struct api *api);

#endif
