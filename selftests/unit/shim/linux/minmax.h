/* SPDX-License-Identifier: GPL-2.0-only */
/* Host build of driver/bucket.c: clamp_t. */
#ifndef _RL_SHIM_MINMAX_H
#define _RL_SHIM_MINMAX_H

#define clamp_t(type, val, lo, hi) ({					\
	type __v = (val), __lo = (lo), __hi = (hi);			\
	__v < __lo ? __lo : (__v > __hi ? __hi : __v); })
#define min_t(type, a, b) ({					\
	type __a = (a), __b = (b);					\
	__a < __b ? __a : __b; })
#endif
