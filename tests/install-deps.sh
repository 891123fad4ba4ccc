#!/usr/bin/env bash
# What the tests need beyond Python packages, from Debian: real Slurm (munge, slurmctld, slurmd, the
# clients), real OpenSSH and a real browser for the HTML page (chromium and its chromedriver, driven by
# selenium). kubectl comes with this machine image; Debian's own package is a fallback.
set -euo pipefail
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
packages=(munge slurmctld slurmd slurm-client openssh-server openssh-client chromium chromium-driver)
command -v kubectl >/dev/null || packages+=(kubernetes-client)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
$sudo mkdir -p /run/sshd
