package doccheck

// root is the repository's top, seen from this package's directory.
const root = "../.."
