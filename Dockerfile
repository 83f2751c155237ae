# kneecap in a container: a static binary on a minimal non-root image.
#   docker build -t kneecap .
#   docker run --rm -v "$PWD/runs:/home/nonroot/runs" kneecap   # the demo, into ./runs
# (the results directory must be writable by uid 65532, distroless's nonroot)
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static (no libc), stripped, with the commit in the build info when .git is in the context.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=auto -ldflags="-s -w" -o /out/kneecap ./cmd/kneecap

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/kneecap /usr/local/bin/kneecap
USER nonroot:nonroot
WORKDIR /home/nonroot
ENTRYPOINT ["/usr/local/bin/kneecap"]
CMD ["sweep"]
