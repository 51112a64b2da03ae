# SPDX-License-Identifier: BSD-2-Clause
# bench/sizes.sh's plots, from its summary.tsv: series, size, median,
# lowest, highest. Each point is the median of the rounds, its bar the
# lowest to the highest. part='samehost' draws bench_latency.svg and
# bench_bandwidth.svg, part='wire' bench_wire_latency.svg and
# bench_wire_bandwidth.svg:
# gnuplot -e "tsv='summary.tsv'; dir='docs/img'; part='wire'" bench/sizes_plot.gp
set terminal svg size 760,520 dynamic noenhanced font "sans,12"
set datafile separator "\t"
set grid
set key below maxrows 3
# rows of one series: size, median, lowest, highest
sel(s) = sprintf("< awk -F'\t' '$1==\"%s\" {print $2 \"\t\" $3 \"\t\" $4 \"\t\" $5}' %s", s, tsv)
set xlabel "message size (bytes)"
set logscale x 2
set logscale y
set format y "%g"
set xrange [1.5:1500000]
set xtics ("2" 2, "16" 16, "128" 128, "1K" 1024, "8K" 8192, "64K" 65536, "512K" 524288)
sub = "(median; bars: lowest to highest round)"

if (part eq "samehost") {
	set output dir."/bench_latency.svg"
	set title "Same-host latency by size ".sub
	set ylabel "latency (us, log)"
	plot sel("write_lat_rings") using 1:2:3:4 with yerrorlines title "uroce same host ib_write_lat (copy)", \
	     sel("write_lat_udp") using ($1*1.06):2:3:4 with yerrorlines title "uroce UDP ib_write_lat", \
	     sel("send_lat_rings") using ($1*1.12):2:3:4 with yerrorlines title "uroce same host ib_send_lat (rings)", \
	     sel("send_lat_udp") using ($1*1.18):2:3:4 with yerrorlines title "uroce UDP ib_send_lat", \
	     sel("put_lat_cma") using 1:2:3:4 with yerrorlines title "UCX cma put_lat (zcopy)", \
	     sel("put_lat_posix") using ($1*1.06):2:3:4 with yerrorlines title "UCX posix put_lat (bcopy)"

	set output dir."/bench_bandwidth.svg"
	set title "Same-host bandwidth by size ".sub
	set ylabel "bandwidth (GB/s, log)"
	plot sel("write_bw_rings") using 1:2:3:4 with yerrorlines title "uroce same host ib_write_bw (copy)", \
	     sel("write_bw_udp") using ($1*1.06):2:3:4 with yerrorlines title "uroce UDP ib_write_bw", \
	     sel("put_bw_cma") using 1:2:3:4 with yerrorlines title "UCX cma put_bw (zcopy)", \
	     sel("put_bw_posix") using ($1*1.06):2:3:4 with yerrorlines title "UCX posix put_bw (bcopy)"
}

if (part eq "wire") {
	set output dir."/bench_wire_latency.svg"
	set title "Over the wire (loopback) latency by size ".sub
	set ylabel "latency (us, log)"
	plot sel("write_lat_udp") using 1:2:3:4 with yerrorlines title "uroce UDP ib_write_lat", \
	     sel("send_lat_udp") using ($1*1.06):2:3:4 with yerrorlines title "uroce UDP ib_send_lat", \
	     sel("put_lat_tcp") using ($1*1.12):2:3:4 with yerrorlines title "UCX tcp put_lat (zcopy)", \
	     sel("fi_lat_tcp") using ($1*1.18):2:3:4 with yerrorlines title "libfabric tcp fi_pingpong (RDM, mean)"

	set output dir."/bench_wire_bandwidth.svg"
	set title "Over the wire (loopback) bandwidth by size ".sub
	set ylabel "bandwidth (GB/s, log)"
	plot sel("write_bw_udp") using 1:2:3:4 with yerrorlines title "uroce UDP ib_write_bw", \
	     sel("put_bw_tcp") using ($1*1.06):2:3:4 with yerrorlines title "UCX tcp put_bw (zcopy)"
}
