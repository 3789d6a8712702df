// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* ringnicdv.h alone, as C++: see CMakeLists.txt. */
#include <infiniband/ringnicdv.h>
