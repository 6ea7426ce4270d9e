/* SPDX-License-Identifier: GPL-2.0-only */
/* Host build of driver/bucket.c: the kernel types it uses. */
#ifndef _RL_SHIM_TYPES_H
#define _RL_SHIM_TYPES_H
#include_next <linux/types.h>
#include <stdbool.h>

typedef __u64 u64;
typedef __u32 u32;
typedef __s64 s64;
#endif
