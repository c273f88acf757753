# The chart's alert rules and dashboard queries are checked by Prometheus's
# promtool (test/manifests/promtool_test.go). Included by the top Makefile
# (-include hack/*/*.mk); `make test` depends on promtool and sets
# LLMGW_REQUIRE_PROMTOOL, so a machine without it fails those tests instead
# of skipping them. promtool comes out of Debian's prometheus package,
# unpacked into bin/ (the Prometheus daemon is neither installed nor run).
# Without root or Debian's mirror: make test LLMGW_REQUIRE_PROMTOOL=0.
.PHONY: promtool

LLMGW_REQUIRE_PROMTOOL ?= 1
PROMTOOL ?= $(BIN)/promtool

promtool: ## unpack promtool from Debian's prometheus package into bin/ (for the alert-rule tests) unless it is there
	@if [ -x "$(PROMTOOL)" ]; then exit 0; fi; \
	if [ "$(LLMGW_REQUIRE_PROMTOOL)" != 1 ]; then echo "[promtool] none: the rule tests will be skipped (LLMGW_REQUIRE_PROMTOOL=0)"; exit 0; fi; \
	echo "[promtool] unpacking promtool from Debian's prometheus package into $(PROMTOOL)"; \
	d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT; \
	( cd "$$d" && { apt-get download prometheus >/dev/null 2>&1 || { apt-get update -qq >/dev/null && apt-get download prometheus >/dev/null; }; } ) || \
	  { echo "[promtool] could not download Debian's prometheus package; make test LLMGW_REQUIRE_PROMTOOL=0 skips those tests"; exit 1; }; \
	dpkg-deb -x "$$d"/prometheus_*.deb "$$d/x" && mkdir -p "$(dir $(PROMTOOL))" && cp "$$d/x/usr/bin/promtool" "$(PROMTOOL)"; \
	"$(PROMTOOL)" --version 2>&1 | head -1
