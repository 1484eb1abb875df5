# fmnist, the paper's CNN, shuffled: central (eps, 1e-05) per client
set encoding utf8
set terminal pngcairo size 900,600 font ',11'
set output 'cnn-frontier-shuffled.png'
set title 'fmnist, the paper''s CNN, shuffled: central (eps, 1e-05) per client'
set xlabel 'central eps per client, total'
set ylabel 'test accuracy (%)'
set key outside right
set grid
set datafile separator ','
set logscale x
set xtics ('3' 3)
set xrange [1.875:4.8]
plot 'cnn-frontier-shuffled.csv' using ($2*1):(stringcolumn(1) eq 'privunitg' ? $3 : 1/0):4 with yerrorlines lw 2 lc rgb '#0072B2' dt 1 pt 7 ps 1.2 title 'privunitg', \
     87.5 with lines dashtype 2 lw 2 lc rgb '#000000' title 'noise-free (tuned the same way)', \
     10 with lines dashtype 2 lw 2 lc rgb '#999999' title 'LDP-FL two-point (eps 6.49e+04 in total)', \
     10 with lines dashtype 2 lw 2 lc rgb '#8C510A' title 'majority class'
set terminal svg size 900,600 dynamic font 'sans,11'
set output 'cnn-frontier-shuffled.svg'
replot
set terminal pdfcairo size 9in,6in font ',11'
set output 'cnn-frontier-shuffled.pdf'
replot
unset output
