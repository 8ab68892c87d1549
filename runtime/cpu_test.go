package runtime

import _ "github.com/switchyard-hal/switchyard/plugins/cpu" // the fallback backend
