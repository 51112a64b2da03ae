# SPDX-License-Identifier: BSD-2-Clause
# The claims benchmark's plots (examples/claims.sh --plot DIR), from its
# tab-separated lines: claim, variant, x, metric, value.
# gnuplot -e "tsv='claims.tsv'; dir='docs/img'" examples/claims_plot.gp
set terminal svg size 640,400 dynamic font "sans,12"
set datafile separator "\t"
set key top left
set grid
# rows of one claim, variant and metric: x against value
sel(c, v, m) = sprintf("< awk -F'\t' '$1==\"%s\" && $2==\"%s\" && $4==\"%s\" {print $3 \"\t\" $5}' %s", c, v, m, tsv)

set output dir."/claims_inline.svg"
set title "Signalled RDMA WRITE latency (post to CQE), median"
set xlabel "message size (bytes)"
set ylabel "latency (us)"
set logscale x 2
set yrange [0:*]
plot sel("inline", "inline", "lat_us") using 1:2 with linespoints title "inline", \
     sel("inline", "not_inline", "lat_us") using 1:2 with linespoints title "not inline"

set output dir."/claims_postlist.svg"
set title "64-byte WRITE rate by WRs per ibv_post_send (one CQE per 64)"
set xlabel "WR list length"
set ylabel "messages per second"
plot sel("postlist", "list", "msg_per_s") using 1:2 with linespoints title "rate"

set output dir."/claims_signal.svg"
set title "64-byte WRITE rate by signalling interval"
set xlabel "one signalled WR in N"
set ylabel "messages per second"
plot sel("signal", "every", "msg_per_s") using 1:2 with linespoints title "rate"

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
plot sel("aggregate", "batch", "updates_per_s") using 1:2 with linespoints title "updates/s", \
     sel("aggregate", "batch", "lat_us") using 1:2 axes x1y2 with linespoints title "latency"
unset logscale y
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
plot sel("rendezvous", "eager", "lat_us") using 1:2 with linespoints title "eager SEND", \
     sel("rendezvous", "rendezvous", "lat_us") using 1:2 with linespoints title "rendezvous (RTS, CTS, WRITE, FIN)"
