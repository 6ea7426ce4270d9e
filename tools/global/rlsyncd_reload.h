/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rlsyncd_reload.h - SIGHUP (rlsyncd_reload.c): the configuration read
 * again.
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RLSYNCD_RELOAD_H
#define RLSYNCD_RELOAD_H

#include "rlsyncd_conf.h"
#include "rlsyncd_link.h"

/*
 * SIGHUP: read @path again and apply it whole into *@links (*@n), or
 * keep them (one line says so); 0 or -EINVAL.
 */
int rls_reload(const char *path, const struct rls_spec *defaults,
	       const char *host, const char *lua, struct rls_link **links, unsigned int *n);

#endif /* RLSYNCD_RELOAD_H */
