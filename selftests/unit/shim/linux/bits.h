/* SPDX-License-Identifier: GPL-2.0-only */
/* Host build of driver/bucket.c: BIT_ULL. */
#ifndef _RL_SHIM_BITS_H
#define _RL_SHIM_BITS_H

#define BIT_ULL(nr)	(1ULL << (nr))
#endif
