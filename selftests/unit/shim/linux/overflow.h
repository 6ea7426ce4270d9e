/* SPDX-License-Identifier: GPL-2.0-only */
/* Host build of driver/bucket.c: the checked arithmetic it uses. */
#ifndef _RL_SHIM_OVERFLOW_H
#define _RL_SHIM_OVERFLOW_H

#define check_add_overflow(a, b, d)	__builtin_add_overflow(a, b, d)
#define check_mul_overflow(a, b, d)	__builtin_mul_overflow(a, b, d)
#endif
