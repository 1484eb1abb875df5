# adult, shuffled: central (eps, 1e-06) per client
set encoding utf8
set terminal pngcairo size 900,600 font ',11'
set output 'frontier-shuffled.png'
set title 'adult, shuffled: central (eps, 1e-06) per client'
set label 1 'error bars: ± 1 sd of the test accuracy over 1 x 5-fold CV, tuned on the training rows of each fold; dashed: the mean alone' at screen 0.01, screen 0.02 left font ',9'
set bmargin 5
set xlabel 'central eps per client, total'
set ylabel 'test accuracy (%)'
set key outside right
set grid
set datafile separator ','
set logscale x
plot 'frontier-shuffled.csv' using 2:(stringcolumn(1) eq 'ps-pm' ? $3 : 1/0):4 with yerrorlines lw 2 lc rgb '#0072B2' pt 7 ps 1.2 title 'ps-pm', \
     'frontier-shuffled.csv' using 2:(stringcolumn(1) eq 'pm' ? $3 : 1/0):4 with yerrorlines lw 2 lc rgb '#D55E00' pt 5 ps 1.2 title 'pm', \
     'frontier-shuffled.csv' using 2:(stringcolumn(1) eq 'twopoint' ? $3 : 1/0):4 with yerrorlines lw 2 lc rgb '#009E73' pt 9 ps 1.2 title 'twopoint', \
     'frontier-shuffled.csv' using 2:(stringcolumn(1) eq 'privunitg' ? $3 : 1/0):4 with yerrorlines lw 2 lc rgb '#CC79A7' pt 11 ps 1.2 title 'privunitg', \
     'frontier-shuffled.csv' using 2:(stringcolumn(1) eq 'fastprojunit' ? $3 : 1/0):4 with yerrorlines lw 2 lc rgb '#E69F00' pt 13 ps 1.2 title 'fastprojunit', \
     'frontier-shuffled.csv' using 2:(stringcolumn(1) eq 'non-private (tuned)' ? $3 : 1/0) with lines dashtype 2 lw 2 lc rgb '#000000' title 'non-private (tuned)', \
     'frontier-shuffled.csv' using 2:(stringcolumn(1) eq 'majority class' ? $3 : 1/0) with lines dashtype 2 lw 2 lc rgb '#999999' title 'majority class'
set terminal svg size 900,600 dynamic font 'sans,11'
set output 'frontier-shuffled.svg'
replot
set terminal pdfcairo size 9in,6in font ',11'
set output 'frontier-shuffled.pdf'
replot
unset output
