/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Host build of driver/bucket.c: 64-bit division helpers. These abort
 * where the kernel's x86 versions would trap (division by zero, or a
 * quotient that does not fit in 64 bits), so the unit test catches it.
 */
#ifndef _RL_SHIM_MATH64_H
#define _RL_SHIM_MATH64_H
#include <stdlib.h>
#include <linux/types.h>

static inline u64 div64_u64_rem(u64 dividend, u64 divisor, u64 *remainder)
{
	if (!divisor)
		abort();
	*remainder = dividend % divisor;
	return dividend / divisor;
}

static inline u64 div64_u64(u64 dividend, u64 divisor)
{
	if (!divisor)
		abort();
	return dividend / divisor;
}

static inline u64 mul_u64_u64_div_u64(u64 a, u64 b, u64 c)
{
	unsigned __int128 q;

	if (!c)
		abort();
	q = (unsigned __int128)a * b / c;
	if (q >> 64)
		abort();
	return (u64)q;
}
#endif
