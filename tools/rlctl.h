/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * rlctl.h - the commands of rlctl that live in files of their own
 * (tools/rlctl_*.c, linked into rlctl).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#ifndef RLCTL_H
#define RLCTL_H

#include "tool.h"

/* rlctl's errors: 1, or EXIT_USAGE for the command line (tool.h). */
#define fail(...)	tool_fail(1, __VA_ARGS__)
#define usage(...)	tool_usage(EXIT_USAGE, __VA_ARGS__)

/*
 * rlctl apply [--dry-run] [--prune] PATH... (rlctl_apply.c): argv[0] is
 * the program, the command's options and operands follow. Returns the
 * exit status: 0, 1 for errors, 2 for a bad command line.
 */
int cmd_apply(int argc, char **argv);

#endif /* RLCTL_H */
