# SPDX-License-Identifier: GPL-2.0-only
#
# Plots of `make bench`: gnuplot -e "dir='build/bench'" scripts/bench.gp
# reads the *.dat files rlbench wrote in dir and writes PNGs beside them.
# A missing data file (a section not run) leaves its plot out.

if (!exists("dir")) dir = "build/bench"
have(f) = system("test -s " . dir . "/" . f . " && echo 1 || echo 0") eq "1"
set terminal pngcairo size 900,560 font ",10" noenhanced
set grid
set key left top

if (have("floor.dat")) {
	set output dir . "/floor.png"
	set title "Floor: ns per call, uncontended (QEMU TCG guest; compare within the plot only)"
	set xlabel "ns per call (log)"
	set ylabel "percentile"
	set logscale x
	set key right bottom
	plot for [c=2:*] dir . "/floor.dat" using c:1 with linespoints \
		title columnhead(c)
	unset logscale x
	set key left top
}

if (have("contention.dat")) {
	set output dir . "/contention.png"
	set title "Contention: aggregate calls/s on one shared limiter (rate 1e9/s)"
	set xlabel "callers"
	set ylabel "calls per second, all callers"
	set xtics (1, 2, 4)
	set yrange [0:*]
	plot dir . "/contention.dat" using 1:2 with linespoints title "ACQUIRE(1), threads", \
		"" using 1:4 with linespoints title "ACQUIRE(1), processes", \
		"" using 1:3 with linespoints dt 2 title "no-op ioctl, threads", \
		"" using 1:5 with linespoints dt 2 title "no-op ioctl, processes"
	set xtics autofreq
	set yrange [*:*]
}

if (have("accuracy.dat")) {
	set output dir . "/accuracy.png"
	set title "Accuracy: achieved / target rate, one caller (goal: within 1%)"
	set xlabel "target rate, tokens/s (log)"
	set ylabel "achieved / target"
	set logscale x
	set yrange [0.5:1.1]
	plot dir . "/accuracy.dat" using 1:3 with linespoints title "ratelimit ACQUIRE(1)", \
		0.99 with lines dt 2 lc "gray" title "-1%", \
		1.01 with lines dt 2 lc "gray" title "+1%"
	unset logscale x
	set yrange [*:*]
}

if (have("wake.dat")) {
	set output dir . "/wake.png"
	set title "Wake latency: due time to return, blocked ACQUIRE vs timerfd"
	set xlabel "latency, us (log)"
	set ylabel "percentile"
	set logscale x
	set key right bottom
	plot dir . "/wake.dat" using ($2/1000):1 with linespoints title "ACQUIRE (ready_ns to return)", \
		"" using ($3/1000):1 with linespoints title "timerfd (expiry to read() return)"
	unset logscale x
	set key left top
}

if (have("fairness.dat")) {
	set output dir . "/fairness.png"
	set title "Fairness: Jain's index of N clients on one limiter (goal >= 0.99)"
	set xlabel "clients"
	set ylabel "Jain's index"
	set logscale x 2
	set yrange [0.8:1.01]
	plot dir . "/fairness.dat" using 1:2 with linespoints title "ratelimit", \
		"" using 1:3 with linespoints title "shm pthread bucket", \
		0.99 with lines dt 2 lc "gray" title "goal"
	unset logscale x
	set yrange [*:*]
}

if (have("peers_cost.dat")) {
	set output dir . "/peers_cost.png"
	set title "Per-acquire cost, uncontended: ratelimit and its peers"
	set xlabel "ns per call (log)"
	set ylabel "percentile"
	set logscale x
	set key right bottom
	plot for [c=2:*] dir . "/peers_cost.dat" using c:1 with linespoints \
		title columnhead(c)
	unset logscale x
	set key left top
}

if (have("batch.dat")) {
	set output dir . "/batch.png"
	set terminal pngcairo size 1100,520 font ",10" noenhanced
	set multiplot layout 1,2 title "Batched reservations (rl_batch_acquire) vs plain ACQUIRE(1), one caller"
	set title "acquires per second"
	set xlabel "limiter rate, tokens/s (log)"
	set ylabel "acquires/s (log)"
	set logscale xy
	plot dir . "/batch.dat" using 1:2 with linespoints title "plain", \
		"" using 1:3 with linespoints title "batch 8", \
		"" using 1:4 with linespoints title "batch 64"
	unset logscale y
	set title "system calls per acquire"
	set ylabel "syscalls per acquire"
	set yrange [0:1.2]
	plot dir . "/batch.dat" using 1:5 with linespoints title "plain", \
		"" using 1:6 with linespoints title "batch 8", \
		"" using 1:7 with linespoints title "batch 64"
	unset multiplot
	unset logscale x
	set yrange [*:*]
}
