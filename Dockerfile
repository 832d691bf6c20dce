# The container of the GitHub Action `uses: sponson/apply@v1`.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/action ./cmd/action \
 && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/sponson ./cmd/sponson

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates git \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/action /out/sponson /usr/local/bin/
ENTRYPOINT ["/usr/local/bin/action"]
