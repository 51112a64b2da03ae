# SPDX-License-Identifier: BSD-2-Clause
# The claims benchmark's plots (examples/claims.sh --plot DIR), from its
# claims.tsv: claim, variant, x, metric, median, lowest, highest. Each
# point is the median of the runs, its bar the lowest to the highest.
# gnuplot -e "tsv='claims.tsv'; dir='docs/img'" examples/claims_plot.gp
set terminal svg size 640,400 dynamic font "sans,12"
set datafile separator "\t"
set key inside top left
set grid
# rows of one claim, variant and metric: x against value
sel(c, v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $2==\"%s\" && $4==\"%s\" {print $3 \"\t\" $5 \"\t\" $6 \"\t\" $7}' %s", c, v, m, tsv)

set output dir."/claims_inline.svg"
set title "Signalled RDMA WRITE latency (post to CQE), median"
set xlabel "message size (bytes)"
set ylabel "latency (us)"
set logscale x 2
set yrange [0:*]
plot sel("inline", "inline", "lat_us") using 1:2:3:4 with yerrorlines title "inline", \
     sel("inline", "not_inline", "lat_us") using ($1*1.1):2:3:4 with yerrorlines title "not inline"

set output dir."/claims_postlist.svg"
set title "64-byte WRITE rate by WRs per ibv_post_send (one CQE per 64)"
set xlabel "WR list length"
set ylabel "messages per second"
plot sel("postlist", "list", "msg_per_s") using 1:2:3:4 with yerrorlines title "rate"

set output dir."/claims_signal.svg"
set title "64-byte WRITE rate by signalling interval"
set xlabel "one signalled WR in N"
set ylabel "messages per second"
plot sel("signal", "every", "msg_per_s") using 1:2:3:4 with yerrorlines title "rate"

set output dir."/claims_aggregate.svg"
set title "16-byte updates, B per WRITE: rate and latency"
set xlabel "updates per WRITE (B)"
set ylabel "updates per second"
set y2label "mean latency (us)"
set yrange [*:*]
set y2range [0:*]
set logscale y
set y2tics
set ytics nomirror
set logscale x 2
set key below
plot sel("aggregate", "batch", "updates_per_s") using 1:2:3:4 with yerrorlines title "updates/s", \
     sel("aggregate", "batch", "lat_us") using ($1*1.1):2:3:4 axes x1y2 with yerrorlines title "latency (right)", \
     sel("aggregate", "paced_20k", "lat_us") using ($1*1.2):2:3:4 axes x1y2 with yerrorlines title "latency at 20k updates/s (right)"
unset logscale y
set key inside top left
unset y2tics
unset y2label
set ytics mirror

set output dir."/claims_rendezvous.svg"
set title "Message round trip (sent and acknowledged), median"
set xlabel "message size (bytes)"
set ylabel "latency (us)"
set logscale x 2
set logscale y
set yrange [*:*]
set xrange [40:1600000]
set xtics ("64" 64, "256" 256, "1K" 1024, "4K" 4096, "16K" 16384, "64K" 65536, "256K" 262144, "1M" 1048576)
# (the second series a little to the right, so that the bars do not meet)
plot sel("rendezvous", "eager", "lat_us") using 1:2:3:4 with yerrorlines title "eager SEND", \
     sel("rendezvous", "rendezvous", "lat_us") using ($1*1.15):2:3:4 with yerrorlines title "rendezvous (RTS, CTS, WRITE, FIN)"
