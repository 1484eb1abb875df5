# adult, shuffled: central (eps, 1e-06) per client
set terminal pngcairo size 900,600 font ',11'
set output 'frontier-shuffled.png'
set title 'adult, shuffled: central (eps, 1e-06) per client'
set xlabel 'central eps per client, total'
set ylabel 'test accuracy (%)'
set key outside right
set grid
set datafile separator ','
set logscale x
plot 'frontier-shuffled.csv' using 2:(stringcolumn(1) eq 'ps-pm' ? $3 : 1/0):4 with yerrorlines lw 2 title 'ps-pm', \
     'frontier-shuffled.csv' using 2:(stringcolumn(1) eq 'pm' ? $3 : 1/0):4 with yerrorlines lw 2 title 'pm', \
     'frontier-shuffled.csv' using 2:(stringcolumn(1) eq 'twopoint' ? $3 : 1/0):4 with yerrorlines lw 2 title 'twopoint', \
     'frontier-shuffled.csv' using 2:(stringcolumn(1) eq 'privunitg' ? $3 : 1/0):4 with yerrorlines lw 2 title 'privunitg', \
     'frontier-shuffled.csv' using 2:(stringcolumn(1) eq 'fastprojunit' ? $3 : 1/0):4 with yerrorlines lw 2 title 'fastprojunit', \
     'frontier-shuffled.csv' using 2:(stringcolumn(1) eq 'non-private (tuned)' ? $3 : 1/0) with lines dashtype 2 lw 2 title 'non-private (tuned)', \
     'frontier-shuffled.csv' using 2:(stringcolumn(1) eq 'majority class' ? $3 : 1/0) with lines dashtype 2 lw 2 title 'majority class'
