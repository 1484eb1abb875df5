# adult, local: total eps per client
set terminal pngcairo size 900,600 font ',11'
set output 'frontier-local.png'
set title 'adult, local: total eps per client'
set xlabel 'eps per client, total'
set ylabel 'test accuracy (%)'
set key outside right
set grid
set datafile separator ','
set logscale x
plot 'frontier-local.csv' using 2:(stringcolumn(1) eq 'ps-pm' ? $3 : 1/0):4 with yerrorlines lw 2 title 'ps-pm', \
     'frontier-local.csv' using 2:(stringcolumn(1) eq 'pm' ? $3 : 1/0):4 with yerrorlines lw 2 title 'pm', \
     'frontier-local.csv' using 2:(stringcolumn(1) eq 'twopoint' ? $3 : 1/0):4 with yerrorlines lw 2 title 'twopoint', \
     'frontier-local.csv' using 2:(stringcolumn(1) eq 'gaussian' ? $3 : 1/0):4 with yerrorlines lw 2 title 'gaussian', \
     'frontier-local.csv' using 2:(stringcolumn(1) eq 'privunitg' ? $3 : 1/0):4 with yerrorlines lw 2 title 'privunitg', \
     'frontier-local.csv' using 2:(stringcolumn(1) eq 'fastprojunit' ? $3 : 1/0):4 with yerrorlines lw 2 title 'fastprojunit', \
     'frontier-local.csv' using 2:(stringcolumn(1) eq 'non-private (tuned)' ? $3 : 1/0) with lines dashtype 2 lw 2 title 'non-private (tuned)', \
     'frontier-local.csv' using 2:(stringcolumn(1) eq 'majority class' ? $3 : 1/0) with lines dashtype 2 lw 2 title 'majority class'
