#include "mimic/synth/chakra.h"
#include "testing.h"
