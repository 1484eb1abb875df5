# n shuffled eps0-LDP reports: central eps at delta 1e-06
set encoding utf8
set terminal pngcairo size 900,600 font ',11'
set output 'shuffle-bounds.png'
set title 'n shuffled eps0-LDP reports: central eps at delta 1e-06'
set xlabel 'n (reports shuffled together)'
set ylabel 'central eps'
set key outside right
set grid
set datafile separator ','
set logscale x
set logscale y
plot 'shuffle-bounds.csv' using 2:(stringcolumn(1) eq 'fmt at eps0 1' ? $3 : 1/0):4 with yerrorlines lw 2 lc rgb '#0072B2' dt 1 pt 7 ps 1.2 title 'fmt at eps0 1', \
     'shuffle-bounds.csv' using 2:(stringcolumn(1) eq 'variation-ratio at eps0 1' ? $3 : 1/0):4 with yerrorlines lw 2 lc rgb '#D55E00' dt (8,3) pt 5 ps 1.2 title 'variation-ratio at eps0 1', \
     'shuffle-bounds.csv' using 2:(stringcolumn(1) eq 'closed-form at eps0 1' ? $3 : 1/0):4 with yerrorlines lw 2 lc rgb '#009E73' dt (2,2) pt 9 ps 1.2 title 'closed-form at eps0 1', \
     'shuffle-bounds.csv' using 2:(stringcolumn(1) eq 'fmt at eps0 2' ? $3 : 1/0):4 with yerrorlines lw 2 lc rgb '#CC79A7' dt (8,3,2,3) pt 11 ps 1.2 title 'fmt at eps0 2', \
     'shuffle-bounds.csv' using 2:(stringcolumn(1) eq 'variation-ratio at eps0 2' ? $3 : 1/0):4 with yerrorlines lw 2 lc rgb '#E69F00' dt (14,4) pt 13 ps 1.2 title 'variation-ratio at eps0 2', \
     'shuffle-bounds.csv' using 2:(stringcolumn(1) eq 'closed-form at eps0 2' ? $3 : 1/0):4 with yerrorlines lw 2 lc rgb '#56B4E9' dt (4,4) pt 6 ps 1.2 title 'closed-form at eps0 2', \
     'shuffle-bounds.csv' using 2:(stringcolumn(1) eq 'fmt at eps0 4' ? $3 : 1/0):4 with yerrorlines lw 2 lc rgb '#B8A000' dt (8,3,2,3,2,3) pt 4 ps 1.2 title 'fmt at eps0 4', \
     'shuffle-bounds.csv' using 2:(stringcolumn(1) eq 'variation-ratio at eps0 4' ? $3 : 1/0):4 with yerrorlines lw 2 lc rgb '#0072B2' dt 1 pt 8 ps 1.2 title 'variation-ratio at eps0 4', \
     'shuffle-bounds.csv' using 2:(stringcolumn(1) eq 'closed-form at eps0 4' ? $3 : 1/0):4 with yerrorlines lw 2 lc rgb '#D55E00' dt (8,3) pt 10 ps 1.2 title 'closed-form at eps0 4'
set terminal svg size 900,600 dynamic font 'sans,11'
set output 'shuffle-bounds.svg'
replot
set terminal pdfcairo size 9in,6in font ',11'
set output 'shuffle-bounds.pdf'
replot
unset output
