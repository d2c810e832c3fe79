#ifndef PUSHGATE_CLIBXML2_SHIM_H
#define PUSHGATE_CLIBXML2_SHIM_H

// libxml2's encoding.h includes ICU's headers when LIBXML_ICU_ENABLED is defined, and those clash
// with the ICU copy inside Foundation ("'UErrorCode' has different definitions in different
// modules") in every Swift module that imports both, even through an `internal import`.
// Undefining the switch hides only the ICU converter fields at the tail of xmlCharEncodingHandler.
// Invariant: Swift code never allocates, embeds or reads an xmlCharEncodingHandler (it uses only
// pointers libxml2 hands out), so the shorter view of that struct is never used for layout.
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlwriter.h>
#include <libxml/xmlsave.h>
#include <libxml/xmlversion.h>

// `xmlFree` is a global function pointer variable, which Swift 6 rejects as shared mutable state.
static inline void pushgate_xml_free(void *pointer) {
    xmlFree(pointer);
}

static inline const char *pushgate_xml_version(void) {
    return LIBXML_DOTTED_VERSION;
}

#endif
