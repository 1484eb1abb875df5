// The registered vector randomizers, in the order the CLI lists them. Each
// entry is defined beside its randomizer (vector_randomizer.h's
// VectorRandomizerKind); a new randomizer adds its line here.
#include "fedldp/vector/vector_randomizer.h"

namespace fedldp {

extern const VectorRandomizerKind kPrivUnitGKind, kFastProjUnitKind, kFastProjUnitCorrKind,
    kGaussianKind, kGaussianClassicKind, kDuchiKind, kLaplaceL1Kind, kSeededPrivUnitGKind,
    kFastProjUnitSeedKind;

namespace {

constexpr const VectorRandomizerKind* kKinds[] = {
    &kPrivUnitGKind, &kFastProjUnitKind,    &kFastProjUnitCorrKind,
    &kGaussianKind,  &kGaussianClassicKind, &kDuchiKind,
    &kLaplaceL1Kind, &kSeededPrivUnitGKind, &kFastProjUnitSeedKind,
};

}  // namespace

std::span<const VectorRandomizerKind* const> VectorRandomizerKinds() { return kKinds; }

}  // namespace fedldp
