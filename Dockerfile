# The image of the GitHub Action `uses: sponson/apply@v1` (action.yml).
#
# One static binary (CGO_ENABLED=0, -trimpath) on an empty base: the final
# stage holds the binary, the CA certificates and an empty /tmp, nothing
# else (no shell, no git: the receipt store is go-git). It builds with no
# registry pull but the build stage's base image. docs/performance.md
# records its size and its start-up time.
#
# GitHub builds the LAST stage for `image: Dockerfile`: the Action's stage
# stays last; other targets (docker build --target NAME) go above it.

FROM golang:1.26-bookworm AS build
WORKDIR /src
# The module download is its own layer: a change to the sources does not
# fetch the modules again.
COPY go.mod go.sum ./
RUN go mod download
# Only the Go sources: an edit to the docs, the workflows or CI scripts
# keeps the compiled layer.
COPY cmd ./cmd
COPY internal ./internal
COPY pkg ./pkg
COPY schema ./schema
# The version and commit every program reports (internal/version): the
# release workflow passes them (--build-arg VERSION=v1.2.3 --build-arg
# COMMIT=<sha>); without them the image says "devel", as -trimpath leaves
# no VCS stamp.
ARG VERSION="" COMMIT=""
ENV SPONSON_LDFLAGS="-s -w -X github.com/sponson/apply/internal/version.Version=${VERSION} -X github.com/sponson/apply/internal/version.Commit=${COMMIT}"
RUN CGO_ENABLED=0 go build -trimpath -ldflags "$SPONSON_LDFLAGS" -o /out/action ./cmd/action \
 && mkdir -p /out/tmp && chmod 1777 /out/tmp

# The bot (cmd/bot): docker build --target bot -t sponson-bot .
# Its own build stage, so building the Action's image never compiles it.
FROM build AS build-bot
RUN CGO_ENABLED=0 go build -trimpath -ldflags "$SPONSON_LDFLAGS" -o /out/bot ./cmd/bot

FROM scratch AS bot
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/tmp /tmp
COPY --from=build-bot /out/bot /sponson-bot
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt SPONSON_ADDR=:8080
EXPOSE 8080
# Not root: the bot needs nothing but its port and /tmp (unsaved receipts).
USER 65532:65532
ENTRYPOINT ["/sponson-bot"]

FROM scratch AS action
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/tmp /tmp
COPY --from=build /out/action /sponson-action
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
ENTRYPOINT ["/sponson-action"]
