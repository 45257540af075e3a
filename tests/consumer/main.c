/* An application linking libvkllm through its one public header. */
#include <stdio.h>
#include <string.h>

#include <vkllm.h>

int main(void) {
    printf("vkllm %s (%s)\n", vkllm_version(), vkllm_git_commit());
    if (strcmp(vkllm_status_name(VKLLM_STATUS_DEVICE_OOM), "VKLLM_STATUS_DEVICE_OOM") != 0) return 1;
    struct vkllm_device_info *devs = NULL;
    uint32_t n = 0;
    vkllm_status st = vkllm_devices_list(&devs, &n);
    if (st != VKLLM_STATUS_OK) {
        fprintf(stderr, "devices: %s\n", vkllm_last_error());
        return 1;
    }
    printf("%u device(s)\n", n);
    vkllm_devices_free(devs);
    return 0;
}
