# The Debian package: `cpack -G DEB` in a build directory makes
# seqd_<version>_amd64.deb with seqd, seqctl and seqbench and their man pages
# (cmake/man_pages.cmake), the configuration
# in /etc/seqd (conffiles), a hardened systemd unit, and the Prometheus rules
# and Grafana dashboard under /usr/share/seqd (docs/deploy.md).
#
# Its files are one install component, `seqd`, excluded from a plain
# `cmake --install` (which installs the client library for find_package):
# only cpack asks for it. Paths are relative to CPACK_PACKAGING_INSTALL_PREFIX
# "/", so the package owns /usr/bin and /etc alike.

# The packaged configuration is config/seqd.conf with the database in the
# unit's StateDirectory.
file(READ ${CMAKE_SOURCE_DIR}/config/seqd.conf seqd_conf)
set(seqd_conf_store "store = sqlite:./data/seqd.db\n")
string(FIND "${seqd_conf}" "${seqd_conf_store}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "config/seqd.conf: no line '${seqd_conf_store}' to point at /var/lib/seqd")
endif()
string(REPLACE "${seqd_conf_store}" "store = sqlite:/var/lib/seqd/seqd.db\n" seqd_conf
  "${seqd_conf}")
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/package/etc/seqd.conf CONTENT "${seqd_conf}" @ONLY)

set(seqd_deploy ${CMAKE_SOURCE_DIR}/deploy/debian)
install(TARGETS seqd seqctl seqbench RUNTIME DESTINATION usr/bin
  COMPONENT seqd EXCLUDE_FROM_ALL)
if(SEQD_MAN_PAGES)
  install(FILES ${SEQD_MAN_PAGE_FILES} DESTINATION usr/share/man/man1
    COMPONENT seqd EXCLUDE_FROM_ALL)
else()
  # No package without its man pages.
  file(WRITE ${CMAKE_BINARY_DIR}/package/refuse.cmake "message(FATAL_ERROR \"this build has no "
    "man pages (SEQD_MAN_PAGES=OFF): configure with -DSEQD_MAN_PAGES=ON to make the .deb\")\n")
  set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_BINARY_DIR}/package/refuse.cmake)
endif()
install(FILES ${CMAKE_BINARY_DIR}/package/etc/seqd.conf DESTINATION etc/seqd
  COMPONENT seqd EXCLUDE_FROM_ALL)
install(FILES ${seqd_deploy}/seqd.service DESTINATION usr/lib/systemd/system
  COMPONENT seqd EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_SOURCE_DIR}/config/prometheus/prometheus.yml
  ${CMAKE_SOURCE_DIR}/config/prometheus/seqd-alerts.yml
  ${CMAKE_SOURCE_DIR}/config/prometheus/seqd-alerts.test.yml
  DESTINATION usr/share/seqd/prometheus COMPONENT seqd EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_SOURCE_DIR}/config/grafana/seqd-dashboard.json
  DESTINATION usr/share/seqd/grafana COMPONENT seqd EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/CHANGELOG.md
  DESTINATION usr/share/doc/seqd COMPONENT seqd EXCLUDE_FROM_ALL)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION usr/share/doc/seqd
  COMPONENT seqd EXCLUDE_FROM_ALL FILES_MATCHING PATTERN "*.md")

set(CPACK_PACKAGE_NAME seqd)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "seqd maintainers <maintainers@seqd.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "ID and sequence server (segment IDs, snowflake, messages)")
set(CPACK_PACKAGE_DESCRIPTION
  "seqd hands out unique increasing IDs (Leaf-style segments on SQLite or MySQL/MariaDB), snowflake IDs and per-conversation message seqs over HTTP, a binary TCP protocol and RESP. Includes seqctl and seqbench.")
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # seqd_<version>_<arch>.deb
set(CPACK_INSTALL_CMAKE_PROJECTS "${CMAKE_BINARY_DIR};seqd;seqd;/")
set(CPACK_PACKAGING_INSTALL_PREFIX /)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The libraries' packages (dpkg-shlibdeps), and /bin/kill for the unit's ExecReload.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS procps)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${seqd_deploy}/conffiles ${seqd_deploy}/postinst ${seqd_deploy}/prerm ${seqd_deploy}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
