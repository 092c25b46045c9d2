package stead

// Version is the version of this module, in semantic versioning without the leading "v": the
// release its tag names (v0.1.0 is Version "0.1.0"). CHANGELOG.md at the repository's root says
// what each release holds and names every change to the exported API. While the major version is
// 0, a minor release may change the API, and only as the changelog says; see README.md,
// "Stability".
const Version = "0.1.0"
