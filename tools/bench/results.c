// SPDX-License-Identifier: GPL-2.0-only
/*
 * results.c - the results: rows of the table, notes, the closing summary, and
 * the files of -o DIR (results.csv, results.json).
 *
 * Copyright (C) 2026 The ratelimit authors
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <sys/utsname.h>

#include "bench.h"

static const char *const verdict_name[] = { "info", "met", "MISSED", "skip" };

struct row {
	char sec[16];
	char name[72];
	double val;
	char unit[12];
	char base[56];
	double bval;
	double ratio;
	char goal[24];
	enum verdict v;
};

static struct row rows[512];
static int nrows;

void row(const char *sec, const char *name, double val,
	 const char *unit, const char *base, double bval,
	 const char *goal, enum verdict v)
{
	struct row *r;

	if (nrows == (int)(ARRAY_SIZE(rows)))
		return;
	r = &rows[nrows++];
	snprintf(r->sec, sizeof(r->sec), "%s", sec);
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->val = val;
	snprintf(r->unit, sizeof(r->unit), "%s", unit);
	snprintf(r->base, sizeof(r->base), "%s", base ? base : "");
	r->bval = base ? bval : NAN;
	r->ratio = base && bval != 0 ? val / bval : NAN;
	snprintf(r->goal, sizeof(r->goal), "%s", goal ? goal : "");
	r->v = v;
	if (isnan(val) && !base) {
		printf("  note: %s\n", name);
		return;
	}
	printf("  %-44s %12.4g %-5s", name, val, unit);
	if (base)
		printf(" | %-30s %12.4g  x%.3f", base, bval, r->ratio);
	if (goal)
		printf("  [%s: %s]", goal, verdict_name[v]);
	putchar('\n');
	fflush(stdout);
}

enum verdict at_most(double x, double lim)
{
	return isnan(x) ? V_SKIP : x <= lim ? V_MET : V_MISSED;
}

enum verdict at_least(double x, double lim)
{
	return isnan(x) ? V_SKIP : x >= lim ? V_MET : V_MISSED;
}

void note(const char *sec, const char *fmt, ...)
{
	char buf[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	row(sec, buf, NAN, "", NULL, 0, NULL, V_INFO);
}

static void print_num(FILE *f, double x)
{
	if (isnan(x) || isinf(x))
		fputs("null", f);
	else
		fprintf(f, "%.6g", x);
}

FILE *open_out(const char *file)
{
	char path[512];
	FILE *f;

	if (!opt_dir)
		return NULL;
	snprintf(path, sizeof(path), "%s/%s", opt_dir, file);
	f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "rlbench: %s: %s\n", path, strerror(errno));
	return f;
}

void write_results(void)
{
	struct utsname u;
	FILE *f;
	int i;

	uname(&u);
	f = open_out("results.csv");
	if (f) {
		fprintf(f, "section,name,value,unit,baseline,baseline_value,ratio,goal,verdict\n");
		for (i = 0; i < nrows; i++) {
			struct row *r = &rows[i];

			fprintf(f, "%s,\"%s\",", r->sec, r->name);
			if (!isnan(r->val))
				fprintf(f, "%.6g", r->val);
			fprintf(f, ",%s,\"%s\",", r->unit, r->base);
			if (!isnan(r->bval))
				fprintf(f, "%.6g", r->bval);
			fputc(',', f);
			if (!isnan(r->ratio))
				fprintf(f, "%.6g", r->ratio);
			fprintf(f, ",\"%s\",%s\n", r->goal, verdict_name[r->v]);
		}
		fclose(f);
	}
	f = open_out("results.json");
	if (!f)
		return;
	fprintf(f, "{\n  \"kernel\": \"%s\",\n  \"machine\": \"%s\",\n",
		u.release, u.machine);
	fprintf(f, "  \"clocksource\": \"%s\",\n", clocksource);
	fprintf(f, "  \"cpus\": %ld,\n  \"scale\": %g,\n  \"results\": [\n",
		sysconf(_SC_NPROCESSORS_ONLN), opt_scale);
	for (i = 0; i < nrows; i++) {
		struct row *r = &rows[i];

		fprintf(f, "    {\"section\": \"%s\", \"name\": \"%s\", \"value\": ",
			r->sec, r->name);
		print_num(f, r->val);
		fprintf(f, ", \"unit\": \"%s\", \"baseline\": \"%s\", \"baseline_value\": ",
			r->unit, r->base);
		print_num(f, r->bval);
		fputs(", \"ratio\": ", f);
		print_num(f, r->ratio);
		fprintf(f, ", \"goal\": \"%s\", \"verdict\": \"%s\"}%s\n",
			r->goal, verdict_name[r->v], i + 1 < nrows ? "," : "");
	}
	fputs("  ]\n}\n", f);
	fclose(f);
}

void print_summary(void)
{
	int i, met = 0, missed = 0;

	printf("\n== summary: goals ==\n");
	for (i = 0; i < nrows; i++) {
		struct row *r = &rows[i];

		if (r->v != V_MET && r->v != V_MISSED)
			continue;
		printf("  %-7s %-10s %-44s %s\n", verdict_name[r->v], r->sec,
		       r->name, r->goal);
		met += r->v == V_MET;
		missed += r->v == V_MISSED;
	}
	printf("  goals met: %d, missed: %d\n", met, missed);
}
