/* SPDX-License-Identifier: GPL-2.0-only */
/* Host build of driver/bucket.c: U64_MAX. */
#ifndef _RL_SHIM_LIMITS_H
#define _RL_SHIM_LIMITS_H
#include_next <linux/limits.h>
#include <stdint.h>

#define U64_MAX UINT64_MAX
#define S64_MAX INT64_MAX
#endif
