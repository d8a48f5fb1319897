// nghttp2 (Debian's libnghttp2-dev), imported only by the HTTP2 module.
#include <nghttp2/nghttp2.h>
