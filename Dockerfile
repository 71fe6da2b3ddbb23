# kip2cypher's HTTP MCP server as a container: `kip2cypher mcp --transport http` on port 8000.
#   docker build -t kip2cypher .                      (--build-arg EXTRAS= : without the offline embedder)
#   docker run -p 8000:8000 -e NEO4J_URI=neo4j://db:7687 -e NEO4J_USERNAME=neo4j -e NEO4J_PASSWORD=… \
#              -e KIP2CYPHER_MCP_TOKENS='<token>:rw,<token>:ro' kip2cypher
# compose.yaml runs it beside Neo4j (profile "service"); docs/interfaces.md, "Operating the service".
FROM python:3.12-slim AS build
ARG EXTRAS=embed
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY kip2cypher ./kip2cypher
COPY grammar ./grammar
COPY capsules ./capsules
# A virtual environment of its own, copied whole into the final image (no compiler, no sources there).
RUN python -m venv /opt/kip2cypher && /opt/kip2cypher/bin/pip install ".${EXTRAS:+[$EXTRAS]}"

FROM python:3.12-slim
COPY --from=build /opt/kip2cypher /opt/kip2cypher
# A non-root user with a numeric id (Kubernetes' runAsNonRoot can check it).
RUN groupadd --system --gid 10001 kip && useradd --system --uid 10001 --gid 10001 --create-home --home-dir /home/kip kip
USER 10001:10001
WORKDIR /home/kip
ENV PATH=/opt/kip2cypher/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    KIP2CYPHER_MCP_TRANSPORT=http \
    KIP2CYPHER_MCP_HOST=0.0.0.0 \
    KIP2CYPHER_MCP_PORT=8000
EXPOSE 8000
# Readiness, not mere liveness: healthy once Neo4j answers and the served namespaces are bootstrapped.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/readyz' % os.environ.get('KIP2CYPHER_MCP_PORT', '8000'), timeout=4)"
ENTRYPOINT ["kip2cypher", "mcp"]
CMD ["--transport", "http"]
