#include "trace/trace-hw_qhca.h"
