# The quota store's tests (gateway/quota) run a real redis-server on a random
# loopback port. Included by the top Makefile (-include hack/*/*.mk); `make
# test` depends on redis-server and sets LLMGW_REQUIRE_REDIS, so a machine
# without one fails those tests instead of skipping them. Without root (no
# apt-get): make test LLMGW_REQUIRE_REDIS=0 skips them.
.PHONY: redis-server

LLMGW_REQUIRE_REDIS ?= 1

redis-server: ## install Debian's redis-server (for the quota store tests) when neither it nor valkey-server is on PATH
	@if command -v redis-server >/dev/null || command -v valkey-server >/dev/null; then exit 0; fi; \
	if [ "$(LLMGW_REQUIRE_REDIS)" != 1 ]; then echo "[redis] no redis-server: the quota store tests will be skipped (LLMGW_REQUIRE_REDIS=0)"; exit 0; fi; \
	echo "[redis] apt-get install redis-server (the quota store tests run a real one)"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get install -y -qq --no-install-recommends redis-server >/dev/null 2>&1 || \
	  { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends redis-server >/dev/null; } || \
	  { echo "[redis] could not install redis-server (root and Debian's mirror needed); make test LLMGW_REQUIRE_REDIS=0 skips those tests"; exit 1; }; \
	redis-server --version
