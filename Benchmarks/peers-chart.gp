# peers-chart.gp — grouped bar chart of Benchmarks/peers.sh's main rows (data from peers-report.py).
# Every metric is relative to the best of nginx and HAProxy (= 1.0) and HIGHER IS BETTER:
# throughput rows are value ÷ best peer; cost rows (latency, CPU, syscalls, instructions, RSS)
# are inverted: best peer's cost ÷ cost. Bars above 3 are cut at 3 (the label keeps the value).
# gnuplot -e "datafile='chart.dat'; outfile='peers.png'; subtitlefile='chart.subtitle'" peers-chart.gp
if (!exists("subtitlefile")) subtitlefile = "/dev/null"
subtitle = system("cat '" . subtitlefile . "' 2>/dev/null")
set terminal pngcairo size 900,500 font "sans,9" noenhanced
set output outfile
set title "token-sidecar vs nginx and HAProxy — relative to the best peer (= 1.0), higher is better\n(cost rows inverted: best peer's cost ÷ cost)\n" . subtitle
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set datafile missing "?"
set yrange [0:*]
set offsets 0, 0, 0.25, 0
set grid ytics lc rgb "#dddddd"
set ylabel "relative to best peer (higher is better)"
set key below horizontal
set bmargin 5
set xtics nomirror scale 0 font ",8"
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead lc rgb "#444444" dt 2
clip(x) = (x > 3 ? 3 : x)
lbl(x) = (x != x ? "" : sprintf("%.2f", x))
plot datafile using (clip($2)):xtic(1) title "nginx" lc rgb "#4e79a7", \
     '' using (clip($3)) title "HAProxy (absolute-form)" lc rgb "#59a14f", \
     '' using (clip($4)) title "token-sidecar" lc rgb "#e15759", \
     '' using ($0 - 0.25):(clip($2)):(lbl($2)) with labels offset 0,0.6 font ",6" notitle, \
     '' using ($0):(clip($3)):(lbl($3)) with labels offset 0,0.6 font ",6" notitle, \
     '' using ($0 + 0.25):(clip($4)):(lbl($4)) with labels offset 0,0.6 font ",6" notitle
