// The one unit of accuracy in everything fedldp writes for people and
// programs: percent. Text, figures, JSON records and the Python module's
// dicts all say 84.47 for 84.47 %; every record names the unit in its
// "accuracy_unit" field, so a file of another unit is never misread.
// Inside the C++ library, accuracies are fractions in [0, 1] (the types say
// so); they become percent where they leave it, through Percent().
#ifndef FEDLDP_BASE_UNITS_H_
#define FEDLDP_BASE_UNITS_H_

namespace fedldp {

inline constexpr const char* kAccuracyUnit = "percent";

// A fraction in [0, 1] as percent; NaN stays NaN.
constexpr double Percent(double fraction) { return 100 * fraction; }

}  // namespace fedldp

#endif  // FEDLDP_BASE_UNITS_H_
